/*
 * The randomizer: draws a reported value from one column of a question's channel matrix.
 *
 * It holds no privacy formula: the column (P(report r | true answer t) for every r) comes from the
 * page, which the server rendered from the frozen design, so the browser can never disagree with
 * the server about ε. Randomness comes from crypto.getRandomValues (never Math.random); the source
 * is injectable so a test can check the arithmetic.
 */
(function (global) {
  "use strict";

  var TWO_POW_26 = 67108864;
  var TWO_POW_53 = 9007199254740992;

  function cryptoWords(count) {
    var words = new Uint32Array(count);
    global.crypto.getRandomValues(words);
    return words;
  }

  /* A uniform number in [0, 1) built from 53 random bits (27 + 26), as many as a double holds. */
  function uniform(source) {
    var words = (source || cryptoWords)(2);
    return ((words[0] >>> 5) * TWO_POW_26 + (words[1] >>> 6)) / TWO_POW_53;
  }

  function checkColumn(column) {
    if (!Array.isArray(column) || column.length < 2) {
      throw new Error("a column needs at least two probabilities");
    }
    var total = 0;
    for (var i = 0; i < column.length; i++) {
      var p = column[i];
      if (typeof p !== "number" || !isFinite(p) || p < 0 || p > 1) {
        throw new Error("column entries must be probabilities");
      }
      total += p;
    }
    if (Math.abs(total - 1) > 1e-9) {
      throw new Error("a column must sum to 1");
    }
  }

  /* The first reported value whose cumulative probability exceeds u. */
  function sample(column, source) {
    checkColumn(column);
    var u = uniform(source);
    var cumulative = 0;
    for (var r = 0; r < column.length; r++) {
      cumulative += column[r];
      if (u < cumulative) {
        return r;
      }
    }
    // u fell in the rounding gap above the last sum: the last value that can be reported.
    for (var last = column.length - 1; last >= 0; last--) {
      if (column[last] > 0) {
        return last;
      }
    }
    throw new Error("unreachable");
  }

  /* Counts of `draws` independent reports from one column (for audits and tests). */
  function sampleCounts(column, draws, source) {
    var counts = new Array(column.length).fill(0);
    for (var i = 0; i < draws; i++) {
      counts[sample(column, source)] += 1;
    }
    return counts;
  }

  global.SurveyRandomizer = Object.freeze({ uniform: uniform, sample: sample, sampleCounts: sampleCounts });
})(window);
