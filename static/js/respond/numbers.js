/*
 * The number sampler: draws the code of a randomized number from the question's sampler.
 *
 * Like the matrix randomizer it holds no privacy formula: every constant (the range, the grid, the
 * mechanism's bound and densities, the hybrid's share) comes from the page, which the server
 * computed from the frozen design (survey/privacy/numeric.py). The arithmetic is that module's,
 * operation for operation, so the tests feed both the same random words and compare the codes.
 * Uniforms come from SurveyRandomizer.uniform: crypto.getRandomValues, or an injected source.
 */
(function (global) {
  "use strict";

  function finite(x, what) {
    if (typeof x !== "number" || !isFinite(x)) {
      throw new Error(what + " must be a finite number");
    }
    return x;
  }

  /* The true number clamped to the range and mapped to [-1, 1]. */
  function normalize(sampler, x) {
    var low = finite(sampler.low, "low");
    var high = finite(sampler.high, "high");
    var clamped = Math.min(Math.max(finite(x, "the answer"), low), high);
    return (clamped - (high + low) / 2) / ((high - low) / 2);
  }

  function duchi(constants, t, u) {
    return u < 0.5 + t / (2 * constants.bound) ? constants.bound : -constants.bound;
  }

  /* The inverse of the piecewise mechanism's CDF, linear on [-C, l), [l, r] and (r, C]. */
  function piecewise(constants, t, u) {
    var c = constants.bound;
    var inside = constants.inside_density;
    var outside = constants.outside_density;
    var left = ((c + 1) / 2) * t - (c - 1) / 2;
    var right = left + (c - 1);
    var before = outside * (left + c);
    var through = before + inside * (c - 1);
    var y;
    if (u < before) {
      y = -c + u / outside;
    } else if (u < through) {
      y = left + (u - before) / inside;
    } else {
      y = right + (u - through) / outside;
    }
    return Math.min(Math.max(y, -c), c);
  }

  function laplace(constants, t, u) {
    var v = Math.max(u, Math.pow(2, -53));
    var centred = v - 0.5;
    return t - constants.scale * Math.sign(centred) * Math.log(1 - 2 * Math.abs(centred));
  }

  /* y for the true value t from the uniforms the mechanism takes. */
  function draw(sampler, t, next) {
    switch (sampler.sampler) {
      case "laplace":
        return laplace(sampler, t, next());
      case "duchi":
        return duchi(sampler, t, next());
      case "piecewise":
        return piecewise(sampler, t, next());
      case "hybrid": {
        var which = next();
        var u = next();
        return which < sampler.piecewise_share ? piecewise(sampler.piecewise, t, u) : duchi(sampler.duchi, t, u);
      }
      default:
        // a sampler this page does not know is refused, never guessed
        throw new Error("unknown number sampler " + String(sampler.sampler));
    }
  }

  /* y rounded at random to the grid origin + step·j: up with the probability of its fraction of a step. */
  function toCode(sampler, y, u) {
    var position = (y - sampler.origin) / sampler.step;
    var below = Math.floor(position);
    return below + (u < position - below ? 1 : 0);
  }

  /* The code sent for the true number x: clamp, draw, round. */
  function report(sampler, x, source) {
    var next = function () {
      return global.SurveyRandomizer.uniform(source);
    };
    var y = draw(sampler, normalize(sampler, x), next);
    return toCode(sampler, y, next());
  }

  /* `draws` codes for one true number (for audits and tests). */
  function reports(sampler, x, draws, source) {
    var out = new Array(draws);
    for (var i = 0; i < draws; i++) {
      out[i] = report(sampler, x, source);
    }
    return out;
  }

  // What a number sampler may carry besides its name (survey/privacy/numeric.py, sampler()): each
  // one a data- attribute of the question's fieldset holding JSON.
  var CONSTANTS = [
    "low",
    "high",
    "origin",
    "step",
    "scale",
    "bound",
    "inside_density",
    "outside_density",
    "piecewise_share",
    "piecewise",
    "duchi",
  ];

  /* A question's sampler from its fieldset's data- attributes (respond.js to send, try.js to try). */
  function samplerFrom(dataset) {
    var sampler = { sampler: dataset.sampler };
    CONSTANTS.forEach(function (name) {
      if (Object.prototype.hasOwnProperty.call(dataset, name)) {
        sampler[name] = JSON.parse(dataset[name]);
      }
    });
    return sampler;
  }

  /* The number a code stands for, in the question's units (numeric.py's value_of): for showing it. */
  function valueOf(sampler, code) {
    var half = (sampler.high - sampler.low) / 2;
    return (sampler.high + sampler.low) / 2 + half * (sampler.origin + sampler.step * code);
  }

  global.SurveyNumbers = Object.freeze({
    normalize: normalize,
    draw: draw,
    toCode: toCode,
    report: report,
    reports: reports,
    samplerFrom: samplerFrom,
    valueOf: valueOf,
  });
})(window);
