// Hover: one crosshair on every chart at the same time, and the values of
// the hovered chart at that time (each run's nearest point), with the
// faults active then. Reads the page's embedded data; draws nothing else.
(function () {
  "use strict";
  var el = document.getElementById("levee-data");
  if (!el) return;
  var data = JSON.parse(el.textContent);
  var G = data.geom;
  var svgs = Array.prototype.slice.call(document.querySelectorAll("svg.chart"));

  function fmt(v, unit) {
    if (v === null || v === undefined) return "–";
    var a = Math.abs(v), s;
    if (a >= 1e4) s = Math.round(v).toLocaleString("en");
    else if (a >= 100) s = v.toFixed(0);
    else if (a >= 10) s = v.toFixed(1);
    else if (a >= 1) s = v.toFixed(2);
    else s = v.toPrecision(2);
    if (unit === "%") return s + " %";
    if (!unit || unit === "requests" || unit === "nodes") return s;
    return s + " " + unit;
  }
  function fmtT(x) {
    if (data.x_max_s < 120) return x.toFixed(1) + " s";
    var t = Math.round(x), m = Math.floor(t / 60), s = t % 60;
    return m + ":" + (s < 10 ? "0" : "") + s;
  }
  // nearest returns the index of the point of xs closest to x, or -1 when
  // none lies within one interval.
  function nearest(xs, x) {
    var lo = 0, hi = xs.length - 1;
    if (hi < 0) return -1;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (xs[mid] < x) lo = mid + 1; else hi = mid;
    }
    var best = lo;
    if (lo > 0 && Math.abs(xs[lo - 1] - x) < Math.abs(xs[lo] - x)) best = lo - 1;
    return Math.abs(xs[best] - x) <= data.interval_s ? best : -1;
  }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c];
    });
  }
  function width(svg) { return svg.viewBox.baseVal.width; }
  function toX(svg, px) { return (px - G.l) / (width(svg) - G.l - G.r) * data.x_max_s; }
  function toPx(svg, x) { return G.l + x / data.x_max_s * (width(svg) - G.l - G.r); }

  function hide() {
    svgs.forEach(function (s) { s.classList.remove("hovering"); });
    document.querySelectorAll(".tip").forEach(function (t) { t.hidden = true; });
  }

  function show(svg, x, clientX, clientY) {
    svgs.forEach(function (s) {
      var c = s.querySelector(".crosshair"), px = toPx(s, x).toFixed(1);
      c.setAttribute("x1", px); c.setAttribute("x2", px);
      s.classList.add("hovering");
    });
    var chart = data.charts[+svg.getAttribute("data-chart")];
    var multi = data.runs.length > 1;
    var rows = "";
    data.runs.forEach(function (run, ri) {
      var i = nearest(run.x, x);
      chart.series.forEach(function (s) {
        if (s.run !== ri) return;
        var v = i < 0 ? null : s.values[i];
        rows += '<tr><th><i style="--c:' + s.color + '"></i>' + (multi ? run.label + " " : "") + esc(s.name) +
          "</th><td>" + fmt(v, chart.unit) + "</td></tr>";
      });
      run.bands.forEach(function (b) {
        if (x >= b.from && x <= b.to) {
          rows += '<tr><td colspan="2" class="ev">' + (multi ? run.label + ": " : "") + esc(b.name + (b.detail ? " " + b.detail : "")) + "</td></tr>";
        }
      });
    });
    var tip = svg.parentNode.querySelector(".tip");
    tip.innerHTML = '<div class="t">t = ' + fmtT(x) + "</div><table>" + rows + "</table>";
    tip.hidden = false;
    var box = svg.parentNode.getBoundingClientRect();
    var left = clientX - box.left + 14, top = clientY - box.top + 10;
    if (left + tip.offsetWidth > box.width) left = Math.max(0, clientX - box.left - tip.offsetWidth - 14);
    if (top + tip.offsetHeight > box.height) top = Math.max(0, box.height - tip.offsetHeight);
    tip.style.left = left + "px";
    tip.style.top = top + "px";
  }

  svgs.forEach(function (svg) {
    var move = function (e) {
      var m = svg.getScreenCTM();
      if (!m) return;
      var pt = svg.createSVGPoint();
      pt.x = e.clientX; pt.y = e.clientY;
      var p = pt.matrixTransform(m.inverse());
      var x = toX(svg, p.x);
      if (x < 0 || x > data.x_max_s) { hide(); return; }
      show(svg, x, e.clientX, e.clientY);
    };
    svg.addEventListener("pointermove", move);
    svg.addEventListener("pointerdown", move); // a tap on a touch screen
    svg.addEventListener("pointerleave", hide);
  });
})();
