/*
 * Memoized randomization: the same browser, answering the same question of the same survey with
 * the same true answer, sends the same reported value every time.
 *
 * Without it, a person who submits twice (an open link allows that) hands out two independent
 * draws of one answer: that spends ε twice, and with enough repeats the noise averages out. As
 * RAPPOR derives its permanent randomized response from an HMAC, the uniform number that picks the
 * report comes from HMAC-SHA256(secret, slug + "\n" + question key + "\n" + true answer code), where
 * the secret is 32 random bytes this browser keeps in localStorage for this site. The HMAC output
 * is uniform, so each report is still distributed exactly as the question's column says; the
 * sampling itself is SurveyRandomizer.sample, fed the first 8 bytes of the HMAC as its two 32-bit
 * words. A randomized number (numbers.js) takes the HMAC of its true number clamped to the range,
 * and its draw takes the HMAC's eight words in order, as many as it needs (two per uniform: four or six).
 * Only the secret is stored: never a true answer, never a reported value. It never leaves the
 * browser.
 *
 * crypto.subtle exists only in secure contexts (https, localhost), and site storage can be blocked;
 * there `available()` is false, and the page falls back to fresh draws and says so.
 */
(function (global) {
  "use strict";

  var STORAGE_KEY = "private-survey.secret";
  var PROBE_KEY = "private-survey.probe";
  var SECRET_BYTES = 32;
  var HEX = /^[0-9a-f]{64}$/;

  function storage() {
    try {
      return global.localStorage || null;
    } catch (e) {
      return null; // storage blocked for this site: reading the property throws
    }
  }

  function toHex(bytes) {
    var out = "";
    for (var i = 0; i < bytes.length; i++) {
      out += (bytes[i] < 16 ? "0" : "") + bytes[i].toString(16);
    }
    return out;
  }

  function fromHex(text) {
    var bytes = new Uint8Array(text.length / 2);
    for (var i = 0; i < bytes.length; i++) {
      bytes[i] = parseInt(text.substr(2 * i, 2), 16);
    }
    return bytes;
  }

  /* Whether this browser can keep a secret and compute an HMAC here (nothing is left behind). */
  function available() {
    if (!global.isSecureContext || !global.crypto || !global.crypto.subtle || !global.TextEncoder) {
      return false;
    }
    var store = storage();
    if (!store) {
      return false;
    }
    try {
      if (HEX.test(store.getItem(STORAGE_KEY) || "")) {
        return true;
      }
      store.setItem(PROBE_KEY, "1");
      store.removeItem(PROBE_KEY);
      return true;
    } catch (e) {
      return false;
    }
  }

  function importSecret(bytes) {
    return global.crypto.subtle.importKey("raw", bytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  }

  var browserKeyPromise = null;

  /* This browser's HMAC key, made (and its secret stored) on first use; null where unavailable. */
  function browserKey() {
    if (browserKeyPromise === null) {
      browserKeyPromise = new Promise(function (resolve) {
        if (!available()) {
          resolve(null);
          return;
        }
        var store = storage();
        var hex = store.getItem(STORAGE_KEY);
        if (!HEX.test(hex || "")) {
          var secret = new Uint8Array(SECRET_BYTES);
          global.crypto.getRandomValues(secret);
          store.setItem(STORAGE_KEY, toHex(secret));
          hex = store.getItem(STORAGE_KEY); // another tab may have written first: use what is kept
          if (!HEX.test(hex || "")) {
            resolve(null);
            return;
          }
        }
        resolve(importSecret(fromHex(hex)));
      }).catch(function () {
        return null;
      });
    }
    return browserKeyPromise;
  }

  /* What the HMAC is taken of. Slugs ([a-z0-9-]) and keys ([a-z0-9_]) hold no newline: the text is unambiguous. */
  function message(slug, key, trueCode) {
    return String(slug) + "\n" + String(key) + "\n" + String(trueCode);
  }

  /* The first `count` (2 unless given, at most 8) big-endian 32-bit words of HMAC-SHA256(key, text). */
  function words(cryptoKey, text, count) {
    var n = count || 2;
    if (n < 1 || n > 8) {
      throw new Error("an HMAC-SHA256 gives 1 to 8 words, not " + n);
    }
    return global.crypto.subtle
      .sign("HMAC", cryptoKey, new global.TextEncoder().encode(text))
      .then(function (mac) {
        var view = new DataView(mac);
        var out = new Uint32Array(n);
        for (var i = 0; i < n; i++) {
          out[i] = view.getUint32(4 * i);
        }
        return out;
      });
  }

  /* A source of words for SurveyRandomizer.uniform that hands out `w` in order; it refuses to run out
     (a draw needing more words than were taken is a bug, never a reason to reuse them). */
  function sourceOf(w) {
    var next = 0;
    return function (count) {
      if (next + count > w.length) {
        throw new Error("the memoized draw needs more than " + w.length + " words");
      }
      var out = w.subarray(next, next + count);
      next += count;
      return out;
    };
  }

  /* The memoized report for a true answer: SurveyRandomizer.sample with the HMAC as its source. */
  function report(cryptoKey, column, slug, key, trueCode) {
    return words(cryptoKey, message(slug, key, trueCode)).then(function (w) {
      return global.SurveyRandomizer.sample(column, function () {
        return w;
      });
    });
  }

  /* The memoized code for a randomized number: SurveyNumbers.report with the HMAC of the clamped
     number as its source (the clamped value, so that 31 and 40 typed in a range to 30 are one answer). */
  function reportNumber(cryptoKey, sampler, slug, key, x) {
    var clamped = Math.min(Math.max(x, sampler.low), sampler.high);
    // all eight words: a draw takes what it needs in order (four or six), and no draw needs more
    return words(cryptoKey, message(slug, key, String(clamped)), 8).then(function (w) {
      return global.SurveyNumbers.report(sampler, clamped, sourceOf(w));
    });
  }

  global.SurveyMemo = Object.freeze({
    STORAGE_KEY: STORAGE_KEY,
    available: available,
    browserKey: browserKey,
    importSecret: importSecret,
    message: message,
    words: words,
    report: report,
    reportNumber: reportNumber,
  });
})(window);
