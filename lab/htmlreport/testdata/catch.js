// Injected first in <head>: collects every script error and console error.
window.__leveeErrors = [];
window.addEventListener("error", function (e) { window.__leveeErrors.push(String(e.message || e)); });
(function () {
  var orig = console.error;
  console.error = function () {
    window.__leveeErrors.push(Array.prototype.join.call(arguments, " "));
    return orig.apply(console, arguments);
  };
})();
