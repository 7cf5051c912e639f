/*
 * Split ballots (survey.domain.surveys.arms), loaded only on a page that has one: the arms of a
 * ballot are fieldsets with data-arm-group and data-arm-share, hidden and disabled as the server
 * sends them. One arm per ballot is drawn with the arms' shares and shown; the others stay disabled,
 * so nothing of them is posted, and the submission answers that arm alone. The draw comes from
 * crypto.getRandomValues, or, where reports are memoized, from this browser's HMAC of the ballot
 * (memo.js): reloading the page shows the same arm, so no one can shop for the way they are asked.
 * An arm is chance, not an answer: not secret.
 */
(function (global) {
  "use strict";

  function ballots(fieldsets) {
    var found = {};
    fieldsets.forEach(function (fieldset) {
      var name = fieldset.dataset.armGroup;
      if (name) {
        (found[name] = found[name] || []).push(fieldset);
      }
    });
    return found;
  }

  /* The index of the arm drawn with the arms' shares (normalized: typed as decimals, they may sum to
     1 within a thousandth), from SurveyRandomizer.sample with `source` (fresh randomness if none). */
  function armIndex(arms, source) {
    var shares = arms.map(function (fieldset) {
      return Number(fieldset.dataset.armShare);
    });
    var total = shares.reduce(function (a, b) {
      return a + b;
    }, 0);
    return global.SurveyRandomizer.sample(
      shares.map(function (share) {
        return share / total;
      }),
      source
    );
  }

  function show(arms, index) {
    arms.forEach(function (fieldset, i) {
      fieldset.hidden = i !== index;
      fieldset.disabled = i !== index;
    });
  }

  /* Show one arm of each ballot among `fieldsets`; resolves once shown. `memo` is SurveyMemo where
     this page memoizes its reports (else null). */
  function assign(form, fieldsets, memo) {
    var groups = ballots(fieldsets);
    var names = Object.keys(groups);
    var fresh = function () {
      names.forEach(function (name) {
        show(groups[name], armIndex(groups[name]));
      });
    };
    if (names.length === 0 || !memo) {
      fresh();
      return Promise.resolve();
    }
    var slug = form.dataset.survey;
    return memo
      .browserKey()
      .then(function (key) {
        if (!key) {
          return null;
        }
        // "arm" is not an answer code, so this HMAC is never one of a report's
        return Promise.all(
          names.map(function (name) {
            return memo.words(key, memo.message(slug, name, "arm"));
          })
        );
      })
      .catch(function () {
        return null;
      })
      .then(function (words) {
        if (words === null) {
          fresh();
          return;
        }
        names.forEach(function (name, i) {
          show(
            groups[name],
            armIndex(groups[name], function () {
              return words[i];
            })
          );
        });
      });
  }

  global.SurveyArms = Object.freeze({ assign: assign });
})(window);
