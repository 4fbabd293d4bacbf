// Injected by browser_test.go at the end of the report's <body>: checks
// what the browser actually drew and writes a verdict into the DOM, which
// the test reads back with --dump-dom.
window.addEventListener("load", function () {
  setTimeout(function () {
    var v = { errors: window.__leveeErrors || [], charts: [], hover: {} };
    try {
      var data = JSON.parse(document.getElementById("levee-data").textContent);
      // Tall charts are drawn twice (wide, and narrow for phones and
      // print); only the displayed drawing counts.
      var svgs = Array.prototype.filter.call(document.querySelectorAll("svg.chart"), function (s) {
        return s.getBoundingClientRect().width > 0;
      });
      v.svgs = svgs.length;
      svgs.forEach(function (svg) {
        var c = data.charts[+svg.getAttribute("data-chart")];
        var r = { id: c.id, drawn: [], bands: 0, lines: 0, marks: 0, oom: 0, overlaps: [], cut: [] };
        svg.querySelectorAll("path.series, path.area").forEach(function (p) {
          var b = p.getBBox();
          var s = c.series[+p.getAttribute("data-series")];
          var style = getComputedStyle(p);
          r.drawn.push({
            key: s.key, run: s.run,
            length: p.getTotalLength(), width: b.width, height: b.height,
            visible: style.visibility !== "hidden" && style.display !== "none" &&
              (p.classList.contains("area") ? style.fill !== "none" : style.stroke !== "none")
          });
        });
        svg.querySelectorAll("rect.band").forEach(function (b) {
          var bb = b.getBBox();
          if (bb.width > 0 && bb.height > 0 && getComputedStyle(b).fillOpacity > 0) r.bands++;
        });
        svg.querySelectorAll("line.hline").forEach(function (l) {
          if (l.getBBox().width > 0) r.lines++;
        });
        // Band labels and line labels drawn over each other.
        var boxes = function (sel) {
          return Array.prototype.map.call(svg.querySelectorAll(sel), function (t) {
            return { box: t.getBBox(), text: t.textContent };
          });
        };
        var lineLabels = boxes("text.line-label");
        boxes("text.band-label").forEach(function (b) {
          lineLabels.forEach(function (l) {
            // Boxes are a font's full height: two rows of labels
            // labelPitch apart touch without their letters meeting.
            var across = Math.min(b.box.x + b.box.width, l.box.x + l.box.width) - Math.max(b.box.x, l.box.x);
            var down = Math.min(b.box.y + b.box.height, l.box.y + l.box.height) - Math.max(b.box.y, l.box.y);
            if (across > 0 && down > 3) {
              r.overlaps.push(b.text + " / " + l.text);
            }
          });
        });
        // Band labels cut at the plot's edge (the bands are clipped to it).
        var clip = svg.querySelector("clipPath rect").getBBox();
        svg.querySelectorAll("text.band-label").forEach(function (t) {
          var b = t.getBBox();
          if (b.x < clip.x - 0.5 || b.x + b.width > clip.x + clip.width + 0.5) r.cut.push(t.textContent);
        });
        r.marks = svg.querySelectorAll("g.narration circle").length;
        r.oom = svg.querySelectorAll("g.oom").length;
        v.charts.push(r);
      });
      // Hover the middle of the first chart: its tip shows values, every
      // chart shows the crosshair.
      var first = svgs[0], box = first.getBoundingClientRect();
      first.dispatchEvent(new PointerEvent("pointermove", {
        bubbles: true, clientX: box.left + box.width * 0.6, clientY: box.top + box.height * 0.5
      }));
      var tip = first.parentNode.querySelector(".tip");
      v.hover = {
        shown: !tip.hidden,
        text: tip.textContent,
        crosshairs: svgs.filter(function (s) { return s.classList.contains("hovering"); }).length
      };
      v.overflow = document.documentElement.scrollWidth - window.innerWidth;
      v.width = window.innerWidth;
      // The smallest axis label as drawn on screen, in CSS px.
      v.axis_px = 0;
      svgs.forEach(function (svg) {
        var lab = svg.querySelector("text.xlab"), m = svg.getScreenCTM();
        if (!lab || !m) return;
        var px = parseFloat(getComputedStyle(lab).fontSize) * m.a;
        if (!v.axis_px || px < v.axis_px) v.axis_px = px;
      });
      // Tables that need sideways scrolling to be read whole.
      v.scrolled = [];
      document.querySelectorAll(".panel").forEach(function (p) {
        var sc = p.querySelector(".scroll"), h = p.querySelector("h2");
        if (sc && h && sc.scrollWidth > sc.clientWidth + 1) v.scrolled.push(h.textContent);
      });
      // Panels beside another that a note under their table made wider
      // than the table needs (squeezing the panel beside them).
      v.widened = [];
      document.querySelectorAll("section.tables > .panel").forEach(function (p) {
        var n = p.querySelector(":scope > .note"), tb = p.querySelector("table"), sc = p.querySelector(".scroll"), h = p.querySelector("h2");
        var cols = getComputedStyle(p.parentNode).gridTemplateColumns.split(" ").length;
        if (!n || !tb || !sc || !h || cols < 2) return;
        var w = tb.style.width;
        tb.style.width = "max-content";
        var need = tb.getBoundingClientRect().width;
        tb.style.width = w;
        if (sc.clientWidth > need + 1) v.widened.push(h.textContent);
      });
      // Rows of headline tiles.
      var tops = {};
      document.querySelectorAll(".tile").forEach(function (t) { tops[Math.round(t.getBoundingClientRect().top)] = true; });
      v.tile_rows = Object.keys(tops).length;
      // Headline tiles whose values run past the tile's edge (hidden
      // under the next tile).
      v.clipped = [];
      document.querySelectorAll(".tile").forEach(function (t) {
        var edge = t.getBoundingClientRect().right;
        t.querySelectorAll(".v").forEach(function (e) {
          if (e.getBoundingClientRect().right > edge + 0.5) {
            v.clipped.push(t.querySelector(".tile-label").textContent + ": " + e.textContent);
          }
        });
      });
    } catch (e) {
      v.errors.push("check: " + e);
    }
    var pre = document.createElement("pre");
    pre.id = "levee-verdict";
    pre.textContent = JSON.stringify(v);
    document.body.appendChild(pre);
  }, 50);
});
