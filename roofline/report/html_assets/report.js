// The roofline HTML report's one script: the interactive chart (hover, zoom, roof and document toggles), the
// records table built from the data block, and sorting and filtering for every table.sortable on the page.
// Every number and text comes from the data block that roofline.report.html wrote (the chart model's roofs
// and points, formatted by roofline.report.format); this script only places and shows them. No network.
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("roofline-data").textContent);
  const C = D.chart;
  const NS = "http://www.w3.org/2000/svg";  // an XML namespace name, never fetched
  const W = 1000, H = 540, M = { l: 92, r: 200, t: 14, b: 46 };
  const PW = W - M.l - M.r, PH = H - M.t - M.b;
  const log10 = Math.log10;
  const home = { x0: log10(C.x[0]), x1: log10(C.x[1]), y0: log10(C.y[0]), y1: log10(C.y[1]) };
  let view = Object.assign({}, home);
  const shown = { sources: new Set(C.sources), docs: new Set(C.series.map((_, i) => i)) };
  let hovered = -1;  // the record whose point is under the pointer (or whose table row is), -1 for none
  let placed = [];  // the points drawn now, in screen units: {i, n, d, x, y, r}

  function svg(tag, attrs, parent) {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function html(tag, cls, text, parent) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  // A wrapping cell's text with a break opportunity after each dot, slash and comma before a name: a module
  // path wraps between its components ('LlamaForCausalLM.model.norm' read 'LlamaForCausalLM.model.no' / 'rm'),
  // never inside a name unless the name alone is wider than the column, nor inside a number ('0.125').
  const BREAK_AFTER = /(?<=[./,])(?=[A-Za-z_{(])/;
  function breakable(e, text) {
    String(text).split(BREAK_AFTER).forEach((part, k) => {
      if (k) e.appendChild(document.createElement("wbr"));
      e.appendChild(document.createTextNode(part));
    });
  }
  const sx = (x) => M.l + (log10(x) - view.x0) / (view.x1 - view.x0) * PW;
  const sy = (y) => M.t + PH - (log10(y) - view.y0) / (view.y1 - view.y0) * PH;
  const boundColour = (b) => C.colours.bounds[b] || C.colours.other;
  const docColour = (d) => C.colours.docs[d % C.colours.docs.length];

  // ---------------------------------------------------------------- tick labels (as the PNG chart's)
  const PREFIXES = [[1e18, "E"], [1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
  function si(v, unit) {
    for (const [scale, p] of PREFIXES) if (v >= scale) return +(v / scale).toPrecision(3) + " " + p + unit;
    return +v.toPrecision(3) + " " + unit;
  }
  const aiTick = (v) => (v >= 1e4 ? +(v / 1e3).toPrecision(3) + "k" : String(+v.toPrecision(3)));
  function ticks(lo, hi) {
    // Decades; inside a zoom of under two decades also 2x and 5x, so an axis never has fewer than two labels.
    const out = [];
    const steps = hi - lo < 2 ? [1, 2, 5] : [1];
    for (let e = Math.floor(lo); e <= Math.ceil(hi); e++) {
      for (const s of steps) {
        const l = e + log10(s);
        if (l >= lo - 1e-9 && l <= hi + 1e-9) out.push({ v: Math.pow(10, l), major: s === 1 });
      }
    }
    return out;
  }

  // ---------------------------------------------------------------- markers (the PNG chart's shapes)
  function marker(kind, x, y, d, parent, attrs) {
    const r = d / 2;
    let e;
    if (kind === "o") e = svg("circle", { cx: x, cy: y, r: r }, parent);
    else if (kind === "s") e = svg("rect", { x: x - r * 0.9, y: y - r * 0.9, width: r * 1.8, height: r * 1.8 }, parent);
    else {
      const shapes = {
        "^": [[0, -1.1], [0.95, 0.6], [-0.95, 0.6]], "v": [[0, 1.1], [0.95, -0.6], [-0.95, -0.6]],
        "D": [[0, -1.05], [0.8, 0], [0, 1.05], [-0.8, 0]],
        "P": [[-0.35, -1], [0.35, -1], [0.35, -0.35], [1, -0.35], [1, 0.35], [0.35, 0.35], [0.35, 1], [-0.35, 1],
              [-0.35, 0.35], [-1, 0.35], [-1, -0.35], [-0.35, -0.35]],
      };
      const pts = (shapes[kind] || shapes["D"]).map(([a, b]) => (x + a * r) + "," + (y + b * r)).join(" ");
      e = svg("polygon", { points: pts }, parent);
    }
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }

  // ---------------------------------------------------------------- the chart
  const box = document.getElementById("chart");
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "roofline", role: "img", "aria-label": C.title }, box);
  const defs = svg("defs", {}, root);
  const clip = svg("clipPath", { id: "plotclip" }, defs);
  svg("rect", { x: M.l, y: M.t, width: PW, height: PH }, clip);
  const layers = {};
  for (const name of ["grid", "axis", "roofs", "headroom", "points", "labels", "numbers", "overlay"]) {
    layers[name] = svg("g", { class: name }, root);
  }
  for (const name of ["roofs", "headroom", "points"]) layers[name].setAttribute("clip-path", "url(#plotclip)");
  const tip = html("div", "tip", null, box);

  function drawAxes() {
    const g = layers.grid, a = layers.axis;
    g.textContent = "";
    a.textContent = "";
    for (const t of ticks(view.x0, view.x1)) {
      const x = sx(t.v);
      svg("line", { x1: x, x2: x, y1: M.t, y2: M.t + PH, class: t.major ? "" : "minor" }, g);
      svg("text", { x: x, y: M.t + PH + 16, "text-anchor": "middle" }, a).textContent = aiTick(t.v);
    }
    for (const t of ticks(view.y0, view.y1)) {
      const y = sy(t.v);
      svg("line", { x1: M.l, x2: M.l + PW, y1: y, y2: y, class: t.major ? "" : "minor" }, g);
      svg("text", { x: M.l - 6, y: y + 4, "text-anchor": "end" }, a).textContent = si(t.v, "FLOP/s");
    }
    svg("rect", { x: M.l, y: M.t, width: PW, height: PH, class: "frame" }, a);
    svg("text", { x: M.l + PW / 2, y: H - 8, "text-anchor": "middle", class: "axis-title" }, a).textContent =
      "arithmetic intensity (FLOP/byte)";
  }

  const roofShown = (r) => shown.sources.has(r.src) && shown.docs.has(r.d);

  // Memory-roof labels run along their diagonals, all at one angle on screen (every memory roof has slope 1 in
  // log-log): in the frame of that angle (u along the text, v across it, up positive) each label is a box. A
  // label takes the first spot along its roof, above the line, then below it, that covers no marker, no
  // label placed before it and no other roof; else the first that covers no marker; else the first in the plot
  // (the DRAM label had sat on the low points of a memory-bound suite, and on the measured DRAM roof's label 4
  // px away).
  const LABEL_UP = 9, LABEL_DOWN = 3, LABEL_GAP = 5;  // a label's ascent and descent (11.5 px text), its offset
  const LABEL_AT = [0.04, 0.1, 0.16, 0.22, 0.28, 0.34, 0.4, 0.46, 0.52, 0.58, 0.64, 0.7];  // of the diagonal
  let roofLabels = [];  // the memory-roof labels drawn now: {x, y, w, e, n} (anchor, width, axes in screen units)

  function inLabel(l, x, y, pad) {
    const dx = x - l.x, dy = y - l.y;
    const u = dx * l.e[0] + dy * l.e[1], v = dx * l.n[0] + dy * l.n[1];
    return u > -pad && u < l.w + pad && v > -LABEL_DOWN - pad && v < LABEL_UP + pad;
  }

  function placeRoofLabels(items, pts, lines) {
    roofLabels = [];
    for (const it of items) {
      const e = it.e, n = it.n, w = it.t.getComputedTextLength();
      const across = (x, y) => x * n[0] + y * n[1];
      let best = null;
      for (const pass of ["free", "markers", "any"]) {
        for (const side of [1, -1]) {  // above its line anywhere before below it: below reads as the next roof's
          for (const f of LABEL_AT) {
            const px = it.x0 + f * (it.x1 - it.x0), py = it.y0 + f * (it.y1 - it.y0);
            const off = side > 0 ? LABEL_GAP + LABEL_DOWN : -(LABEL_GAP + LABEL_UP);
            const l = { x: px + off * n[0], y: py + off * n[1], w: w, e: e, n: n };
            const endX = l.x + w * e[0], endY = l.y + w * e[1];
            if (endX > it.x1 || endY < M.t + 2 || l.y > M.t + PH - 2 || l.x < M.l + 2) continue;
            if (pass !== "any" && pts.some((p) => inLabel(l, p.x, p.y, p.r + 2))) continue;
            if (pass === "free") {
              const v0 = across(l.x, l.y), u0 = l.x * e[0] + l.y * e[1];
              const clash = roofLabels.some((o) => {
                const v = across(o.x, o.y) - v0, u = o.x * e[0] + o.y * e[1] - u0;
                return u < w + 4 && -u < o.w + 4 && v < LABEL_UP + LABEL_DOWN + 2 && -v < LABEL_UP + LABEL_DOWN + 2;
              }) || lines.some((q) => q !== it.line && q.crosses(l));
              if (clash) continue;
            }
            best = l;
            break;
          }
          if (best) break;
        }
        if (best) break;
      }
      if (!best) { it.t.remove(); continue; }  // the drawn part of its roof is shorter than its label
      const deg = Math.atan2(e[1], e[0]) * 180 / Math.PI;
      it.t.setAttribute("x", best.x);
      it.t.setAttribute("y", best.y);
      it.t.setAttribute("transform", `rotate(${deg} ${best.x} ${best.y})`);
      roofLabels.push(best);
    }
  }

  function drawRoofs() {
    const g = layers.roofs, lab = layers.labels;
    g.textContent = "";
    lab.textContent = "";
    const xlo = Math.pow(10, view.x0), xhi = Math.pow(10, view.x1);
    const computeLabels = [], memoryLabels = [], lines = [];
    // the angle of a slope-1 line on screen, its unit vector and the text's up (screen y grows downwards)
    const angle = -Math.atan2(PH / (view.y1 - view.y0), PW / (view.x1 - view.x0));
    const e = [Math.cos(angle), Math.sin(angle)], n = [Math.sin(angle), -Math.cos(angle)];
    for (const r of C.roofs) {
      if (!roofShown(r)) continue;
      const colour = docColour(r.d);
      const style = { stroke: colour, "stroke-width": r.kind === "compute" || r.key === "dram" ? 2 : 1.4, fill: "none",
                      "data-roof": `${r.d}:${r.src}:${r.kind}:${r.key}`, class: "roof " + r.src };
      if (r.src === "measured") { style["stroke-dasharray"] = "7 4"; style["stroke-opacity"] = 0.85; }
      if (r.kind === "compute") {
        const start = r.xstart && r.xstart > xlo ? r.xstart : xlo;
        svg("line", Object.assign({ x1: sx(start), x2: sx(xhi), y1: sy(r.v), y2: sy(r.v) }, style), g);
        if (r.ridge) marker("D", sx(r.ridge), sy(r.v), 8, g, { fill: colour, class: "ridge" });
        const y = sy(r.v), x0 = sx(start);
        if (y >= M.t && y <= M.t + PH) computeLabels.push({ y: y, text: r.text, colour: colour });
        lines.push({ crosses: (l) => {  // the horizontal roof through a label's box (its corners either side)
          const ys = [0, l.w].flatMap((u) => [-LABEL_DOWN, LABEL_UP].map((v) => l.y + u * l.e[1] + v * l.n[1]));
          const xs = [0, l.w].flatMap((u) => [-LABEL_DOWN, LABEL_UP].map((v) => l.x + u * l.e[0] + v * l.n[0]));
          return Math.min(...ys) < y && y < Math.max(...ys) && Math.max(...xs) > x0;
        } });
      } else {
        const end = Math.min(r.xend || xhi, xhi);
        svg("line", Object.assign({ x1: sx(xlo), x2: sx(end), y1: sy(xlo * r.v), y2: sy(end * r.v) }, style), g);
        // where the diagonal enters the plot (its left edge or its floor) to where it ends
        const enter = Math.max(xlo, Math.pow(10, view.y0) / r.v);
        if (enter >= end) continue;
        const line = { x0: sx(enter), y0: sy(enter * r.v), crosses: (l) => {  // a parallel roof across a label
          const v = (line.x0 - l.x) * n[0] + (line.y0 - l.y) * n[1];
          return v > -LABEL_DOWN - 1 && v < LABEL_UP + 1;
        } };
        lines.push(line);
        const t = svg("text", { fill: colour, class: "roof-label" }, lab);
        t.textContent = r.text;
        memoryLabels.push({ t: t, line: line, x0: sx(enter), y0: sy(enter * r.v), x1: Math.min(sx(end), M.l + PW),
                            y1: sy(Math.min(end, xhi) * r.v), e: e, n: n });
      }
    }
    const pts = drawn.filter((i) => shown.docs.has(D.records[i].d)).map((i) => {
      const p = D.records[i].p;
      return { x: sx(p[0]), y: sy(p[1]), r: p[4] * 2 / 3 };
    });
    placeRoofLabels(memoryLabels, pts, lines);
    // Compute labels in the right margin at their roof's height (as the PNG chart's), pushed apart when two
    // would overlap; a short tick joins each to its roof.
    computeLabels.sort((p, q) => p.y - q.y);
    let last = -1e9;
    // A label wider than the margin breaks at its spaces onto more lines: 'CPU FP32 matmul 115 GFLOP/s
    // (measured)' ran past the chart's right edge and was clipped.
    for (const l of computeLabels) {
      const y = Math.max(l.y, last + 13);
      svg("line", { x1: M.l + PW, x2: M.l + PW + 6, y1: l.y, y2: y, stroke: l.colour }, lab);
      const t = svg("text", { x: M.l + PW + 8, y: y + 4, fill: l.colour, class: "roof-label" }, lab);
      last = y + 13 * (fitLines(t, l.text, W - (M.l + PW + 8) - 2) - 1);
    }
  }

  // `text` in the SVG text element `t`, broken at its spaces into lines of at most `width` units (tspans 13
  // apart); the number of lines.
  function fitLines(t, text, width) {
    t.textContent = text;
    if (t.getComputedTextLength() <= width) return 1;
    t.textContent = "";
    const x = t.getAttribute("x");
    let line = [], tspan = null, lines = 0;
    for (const word of text.split(" ")) {
      if (tspan === null) {
        tspan = svg("tspan", { x: x, dy: lines ? 13 : 0 }, t);
        lines += 1;
      }
      line.push(word);
      tspan.textContent = line.join(" ");
      if (line.length > 1 && tspan.getComputedTextLength() > width) {
        line.pop();
        tspan.textContent = line.join(" ");
        tspan = svg("tspan", { x: x, dy: 13 }, t);
        lines += 1;
        line = [word];
        tspan.textContent = word;
      }
    }
    return lines;
  }

  const drawn = D.records.map((r, i) => i).filter((i) => D.records[i].p);
  // A profile's largest markers first (beneath), so that its small ones stay visible on top.
  drawn.sort((i, j) => D.records[j].p[4] - D.records[i].p[4]);

  // A point's number goes in the first free place around its marker (right, left, above, below, the corners,
  // then the same ring farther out): numbers of points that sit together cover neither each other nor markers.
  const RING = [[1, -0.6], [-1, -0.6], [0, -1.4], [0, 1.6], [1, 0.9], [-1, 0.9], [1, -1.6], [-1, -1.6]];
  const NUDGES = [1, 2, 3, 4, 5].flatMap((k) => RING.map(([dx, dy]) => [dx * k, dy * k]));
  function placeNumbers(items) {
    const taken = items.map((it) => ({ x0: it.x - it.r, x1: it.x + it.r, y0: it.y - it.r, y1: it.y + it.r }));
    const hit = (b) => taken.some((t) => b.x0 < t.x1 && t.x0 < b.x1 && b.y0 < t.y1 && t.y0 < b.y1)
      || roofLabels.some((l) => [b.x0, b.x1].some((x) => [b.y0, b.y1].some((y) => inLabel(l, x, y, 0)))
                                || inLabel(l, (b.x0 + b.x1) / 2, (b.y0 + b.y1) / 2, 0));
    for (const it of items.filter((it) => it.n !== null).sort((p, q) => p.n - q.n)) {
      const w = 7 * String(it.n).length, h = 11, gap = it.r + 2;
      let best = null;
      for (const [dx, dy] of NUDGES) {
        const cx = it.x + dx * (gap + w / 2), cy = it.y + dy * (gap + h / 2) * 0.9;
        const b = { x0: cx - w / 2, x1: cx + w / 2, y0: cy - h / 2, y1: cy + h / 2 };
        if (!best) best = b;
        if (!hit(b)) { best = b; break; }
      }
      taken.push(best);
      if (best.x0 > M.l && best.x1 < M.l + PW && best.y0 > M.t && best.y1 < M.t + PH) {
        svg("text", { x: (best.x0 + best.x1) / 2, y: best.y1 - 2, "text-anchor": "middle", fill: docColour(it.d),
                      class: "num" }, layers.numbers).textContent = it.n;
      }
    }
  }

  function drawPoints() {
    const g = layers.points, hr = layers.headroom;
    g.textContent = "";
    hr.textContent = "";
    layers.numbers.textContent = "";
    const items = [];
    for (const i of drawn) {
      const rec = D.records[i];
      if (!shown.docs.has(rec.d)) continue;
      const [ai, y, roof, timed, size, headroom] = rec.p;
      const colour = boundColour(rec.bound), d = size * 4 / 3;  // marker sizes are in points, 4/3 px each
      if (headroom && (rec.n !== null || i === hovered)) {
        svg("line", { x1: sx(ai), x2: sx(ai), y1: sy(y), y2: sy(roof), stroke: colour, "stroke-width": 1.4,
                      "stroke-dasharray": "1.5 2.5", "stroke-opacity": 0.8, class: "headroom" }, hr);
      }
      marker(C.markers[rec.d % C.markers.length], sx(ai), sy(y), d, g, {
        fill: timed ? colour : "#fff", stroke: timed ? "#fff" : colour, "stroke-width": timed ? 1 : 2,
        class: "pt" + (i === hovered ? " hl" : ""), "data-i": i,
      });
      if (i === hovered) {  // a ring, not a thicker outline: a 4 px marker would turn into a black dot
        svg("circle", { cx: sx(ai), cy: sy(y), r: Math.max(d / 2 + 3, 7), class: "ring" }, layers.numbers);
      }
      items.push({ i: i, n: rec.n, d: rec.d, x: sx(ai), y: sy(y), r: d / 2 });
    }
    placeNumbers(items);
    return items;
  }

  function draw() { drawAxes(); drawRoofs(); placed = drawPoints(); }

  // ---------------------------------------------------------------- hover: the point's details
  function showTip(i, evt) {
    const rec = D.records[i];
    tip.textContent = "";
    html("b", "t", (rec.n !== null ? rec.n + ". " : "") + rec.label, tip);
    const t = html("table", null, null, tip);
    rec.tip.forEach((v, k) => {
      if (v === null) return;
      const tr = html("tr", null, null, t);
      html("td", null, D.tipNames[k], tr);
      html("td", null, v, tr);
    });
    if (rec.advice.length) {
      const ul = html("ul", null, null, tip);
      for (const a of rec.advice) html("li", null, a, ul);
    }
    tip.style.display = "block";
    const b = box.getBoundingClientRect();
    let x = evt.clientX - b.left + 14, y = evt.clientY - b.top + 14;
    if (x + tip.offsetWidth > b.width) x = Math.max(0, evt.clientX - b.left - tip.offsetWidth - 14);
    if (y + tip.offsetHeight > b.height) y = Math.max(0, evt.clientY - b.top - tip.offsetHeight - 14);
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  }
  function highlight(i) {
    if (hovered === i) return;
    hovered = i;
    placed = drawPoints();
    for (const tr of document.querySelectorAll("#records tbody tr.hl")) tr.classList.remove("hl");
    if (i >= 0) {
      const tr = document.querySelector(`#records tbody tr[data-i="${i}"]`);
      if (tr) tr.classList.add("hl");
    }
  }
  // The point under the pointer is the nearest one within its marker, or within HOVER_PX of a small marker:
  // a profile's smallest markers are 4 px across, too small to aim at.
  const HOVER_PX = 7;
  function nearest(evt) {
    const c = toData(evt);
    let best = -1, bestD = Infinity;
    for (const it of placed) {
      const dist = Math.hypot(it.x - c.px, it.y - c.py);
      if (dist <= Math.max(it.r, HOVER_PX) && dist - it.r < bestD) { best = it.i; bestD = dist - it.r; }
    }
    return best;
  }
  root.addEventListener("mousemove", (evt) => {
    if (drag) return;
    const i = nearest(evt);
    highlight(i);
    if (i >= 0) showTip(i, evt); else tip.style.display = "none";
  });
  root.addEventListener("mouseleave", () => { tip.style.display = "none"; highlight(-1); });

  // ---------------------------------------------------------------- zoom: wheel, drag a box, double-click
  function toData(evt) {
    const p = root.createSVGPoint();
    p.x = evt.clientX;
    p.y = evt.clientY;
    const q = p.matrixTransform(root.getScreenCTM().inverse());
    return { px: q.x, py: q.y, lx: view.x0 + (q.x - M.l) / PW * (view.x1 - view.x0),
             ly: view.y0 + (M.t + PH - q.y) / PH * (view.y1 - view.y0) };
  }
  root.addEventListener("wheel", (evt) => {
    evt.preventDefault();
    const c = toData(evt), f = Math.exp(Math.sign(evt.deltaY) * 0.18);
    view = { x0: c.lx - (c.lx - view.x0) * f, x1: c.lx + (view.x1 - c.lx) * f,
             y0: c.ly - (c.ly - view.y0) * f, y1: c.ly + (view.y1 - c.ly) * f };
    draw();
  }, { passive: false });
  let drag = null;
  root.addEventListener("mousedown", (evt) => {
    if (evt.button !== 0 || nearest(evt) >= 0) return;
    const c = toData(evt);
    drag = { c: c, rect: svg("rect", { x: c.px, y: c.py, width: 0, height: 0, class: "zoombox" }, layers.overlay) };
    evt.preventDefault();
  });
  window.addEventListener("mousemove", (evt) => {
    if (!drag) return;
    const c = toData(evt);
    drag.rect.setAttribute("x", Math.min(c.px, drag.c.px));
    drag.rect.setAttribute("y", Math.min(c.py, drag.c.py));
    drag.rect.setAttribute("width", Math.abs(c.px - drag.c.px));
    drag.rect.setAttribute("height", Math.abs(c.py - drag.c.py));
  });
  window.addEventListener("mouseup", (evt) => {
    if (!drag) return;
    const c = toData(evt), s = drag.c;
    drag.rect.remove();
    drag = null;
    if (Math.abs(c.px - s.px) > 6 && Math.abs(c.py - s.py) > 6) {
      view = { x0: Math.min(c.lx, s.lx), x1: Math.max(c.lx, s.lx), y0: Math.min(c.ly, s.ly), y1: Math.max(c.ly, s.ly) };
      draw();
    }
  });
  root.addEventListener("dblclick", () => { view = Object.assign({}, home); draw(); });

  // ---------------------------------------------------------------- toolbar and legend
  const bar = document.getElementById("chart-tools");
  for (const src of C.sources) {
    const l = html("label", null, null, bar);
    const cb = html("input", null, null, l);
    cb.type = "checkbox";
    cb.checked = true;
    cb.id = "roof-" + src;
    cb.addEventListener("change", () => {
      cb.checked ? shown.sources.add(src) : shown.sources.delete(src);
      drawRoofs();
    });
    l.appendChild(document.createTextNode(" " + src + " roofs"));
  }
  const reset = html("button", null, "reset zoom", bar);
  reset.id = "reset-zoom";
  reset.type = "button";
  reset.addEventListener("click", () => { view = Object.assign({}, home); draw(); });
  html("span", "hint", "hover a point for its details · drag a box or scroll to zoom · double-click to reset", bar);

  const legend = document.getElementById("chart-legend");
  function swatch(parent, line, mk, fill, stroke) {
    const s = svg("svg", { viewBox: "0 0 30 14" }, parent);
    if (line) svg("line", Object.assign({ x1: 0, x2: 30, y1: 7, y2: 7 }, line), s);
    if (mk) marker(mk, 15, 7, 10, s, { fill: fill, stroke: stroke, "stroke-width": 1.2 });
  }
  C.series.forEach((name, d) => {
    const it = html("span", "item series", null, legend);
    it.title = "show or hide this document";
    swatch(it, { stroke: docColour(d), "stroke-width": 2 }, C.markers[d % C.markers.length], "#bbb", docColour(d));
    html("span", null, name, it);
    it.addEventListener("click", () => {
      shown.docs.has(d) ? shown.docs.delete(d) : shown.docs.add(d);
      it.classList.toggle("off", !shown.docs.has(d));
      draw();
    });
  });
  const bounds = [...new Set(D.records.filter((r) => r.p).map((r) => r.bound))].sort();
  for (const b of bounds) {
    const it = html("span", "item", null, legend);
    swatch(it, null, "o", boundColour(b), "#fff");
    html("span", null, b + "-bound", it);
  }
  for (const src of C.sources) {
    const it = html("span", "item", null, legend);
    swatch(it, { stroke: "#2b2b2b", "stroke-width": 2, "stroke-dasharray": src === "measured" ? "7 4" : "" });
    html("span", null, src + " roof", it);
  }
  if (D.records.some((r) => r.p && !r.p[3])) {
    const it = html("span", "item", null, legend);
    swatch(it, null, "o", "#fff", "#555");
    html("span", null, "model only (attainable)", it);
  }
  if (C.profile) html("span", "item note", "marker area: share of the time", legend);
  for (const n of C.notes) html("p", "note", n, document.getElementById("chart-notes"));

  // ---------------------------------------------------------------- tables: build, sort, filter
  function buildRecords() {
    const T = D.table, host = document.getElementById("records");
    if (T.rows.length <= 25) host.classList.add("short");  // a suite's table needs no scrolling of its own
    const table = html("table", "data sortable filter", null, host);
    const tr = html("tr", null, null, html("thead", null, null, table));
    for (const c of T.cols) {
      const th = html("th", c.num ? "num" : null, c.h, tr);
      if (c.tip) th.title = c.tip;
    }
    const body = html("tbody", null, null, table);
    for (const row of T.rows) {
      const r = html("tr", null, null, body);
      r.setAttribute("data-i", row[0]);
      row.slice(1).forEach((cell, k) => {
        const col = T.cols[k];
        const text = Array.isArray(cell) ? cell[1] : cell;
        const td = html("td", (col.num ? "num" : "") + (col.wrap ? " wrap" : ""), col.wrap ? null : text, r);
        if (col.wrap) breakable(td, text);
        if (Array.isArray(cell) && cell[0] !== null) td.setAttribute("data-v", cell[0]);
        if (col.h === "bound") td.classList.add("bound-" + text);
      });
      r.addEventListener("mouseenter", () => { if (D.records[row[0]].p) highlight(row[0]); });
      r.addEventListener("mouseleave", () => highlight(-1));
    }
  }

  function sortable(table) {
    const heads = [...table.tHead.rows[0].cells];
    heads.forEach((th, k) => th.addEventListener("click", () => {
      const asc = th.getAttribute("aria-sort") !== "ascending";
      heads.forEach((h) => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      const body = table.tBodies[0], rows = [...body.rows];
      const key = (tr) => {
        const td = tr.cells[k], v = td.getAttribute("data-v");
        if (v !== null) return +v;
        return th.classList.contains("num") ? null : td.textContent.toLowerCase();
      };
      rows.sort((a, b) => {
        const p = key(a), q = key(b);
        if (p === null || p === "-" || Number.isNaN(p)) return q === null || q === "-" ? 0 : 1;  // blanks last
        if (q === null || q === "-" || Number.isNaN(q)) return -1;
        return (p < q ? -1 : p > q ? 1 : 0) * (asc ? 1 : -1);
      });
      for (const tr of rows) body.appendChild(tr);
    }));
  }

  function filterable(table) {
    const wrap = table.closest(".tablewrap");
    const bar = html("div", "filterbar", null);
    wrap.parentNode.insertBefore(bar, wrap);
    const input = html("input", "filter", null, bar);
    input.type = "search";
    input.placeholder = "filter rows (every word must match)";
    const count = html("span", "note", null, bar);
    const rows = [...table.tBodies[0].rows];
    const say = (n) => { count.textContent = `${n} of ${rows.length} rows`; };
    say(rows.length);
    input.addEventListener("input", () => {
      const words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      let n = 0;
      for (const tr of rows) {
        const text = tr.textContent.toLowerCase();
        const ok = words.every((w) => text.includes(w));
        tr.style.display = ok ? "" : "none";
        n += ok;
      }
      say(n);
    });
  }

  buildRecords();
  draw();
  for (const t of document.querySelectorAll("table.sortable")) {
    sortable(t);
    if (t.classList.contains("filter")) filterable(t);
  }
  document.body.setAttribute("data-ready", "1");
})();
