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
 * words. Only the secret is stored: never a true answer, never a reported value. It never leaves
 * the browser.
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

  /* The first 8 bytes of HMAC-SHA256(key, text) as two big-endian 32-bit words. */
  function words(cryptoKey, text) {
    return global.crypto.subtle
      .sign("HMAC", cryptoKey, new global.TextEncoder().encode(text))
      .then(function (mac) {
        var view = new DataView(mac);
        return new Uint32Array([view.getUint32(0), view.getUint32(4)]);
      });
  }

  /* The memoized report for a true answer: SurveyRandomizer.sample with the HMAC as its source. */
  function report(cryptoKey, column, slug, key, trueCode) {
    return words(cryptoKey, message(slug, key, trueCode)).then(function (w) {
      return global.SurveyRandomizer.sample(column, function () {
        return w;
      });
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
  });
})(window);
