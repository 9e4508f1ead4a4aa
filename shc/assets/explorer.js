// shc offline center explorer (shc.explore.offline_view): draws the views of a precomputed grid from the JSON
// next to it. Centers come as packed bits (numpy.packbits, rows of q bits), S as int8 percent of its upper
// triangle (diagonal included, row by row). No network.
(function () {
  var root = document.currentScript ? document.currentScript.parentNode : null;
  if (!root) { return; }
  var data = JSON.parse(root.querySelector("script.shc-explorer-data").textContent);
  var host = root.querySelector(".shc-explorer-root");
  function bytes(b64) { var s = atob(b64), a = new Uint8Array(s.length); for (var i = 0; i < s.length; i++) { a[i] = s.charCodeAt(i); } return a; }
  function centers(b64, C, q) {
    var packed = bytes(b64), rowBytes = Math.ceil(q / 8), H = [];
    for (var c = 0; c < C; c++) {
      var row = new Int8Array(q);
      for (var k = 0; k < q; k++) { row[k] = (packed[c * rowBytes + (k >> 3)] >> (7 - (k & 7))) & 1 ? 1 : -1; }
      H.push(row);
    }
    return H;
  }
  function similarity(b64, C) {  // the upper triangle, diagonal included, row by row; S is symmetric
    var raw = new Int8Array(bytes(b64).buffer), S = [], k = 0, i, j;
    for (i = 0; i < C; i++) { S.push(new Array(C)); }
    for (i = 0; i < C; i++) { for (j = i; j < C; j++) { S[i][j] = S[j][i] = raw[k++] / 100; } }
    return S;
  }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) { e.setAttribute(k, attrs[k]); }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function select(name, options, value) {
    var label = el("label", {}, name + " "), s = el("select", {"class": "shc-" + name.split(" ")[0]});
    options.forEach(function (o) { var opt = el("option", {value: String(o)}, String(o)); if (String(o) === String(value)) { opt.selected = true; } s.appendChild(opt); });
    label.appendChild(s); return [label, s];
  }
  host.textContent = "";
  var controls = el("div", {"class": "shc-explorer-controls"});
  var method0 = data.methods.indexOf("shc") >= 0 ? "shc" : data.methods[0];
  // open on the first (C, q) of the lists that has a view: a q too short for a C would open on an empty view
  var start = [data.classes[0], data.bits[0]];
  search: for (var i0 = 0; i0 < data.classes.length; i0++) {
    for (var j0 = 0; j0 < data.bits.length; j0++) {
      if (data.views[data.classes[i0] + "/" + data.bits[j0] + "/" + method0]) {
        start = [data.classes[i0], data.bits[j0]]; break search;
      }
    }
  }
  var c = select("classes C", data.classes, start[0]);
  var q = select("bits q", data.bits, start[1]);
  var m = select("center method", data.methods, method0);
  var k = select("class", [], "");
  [c, q, m, k].forEach(function (p) { controls.appendChild(p[0]); controls.appendChild(document.createTextNode(" ")); });
  host.appendChild(controls);
  var summary = el("table", {"class": "shc-explorer-summary"});
  var figures = el("div", {"class": "shc-explorer-figures", style: "display:flex;gap:16px;align-items:flex-end"});
  var hist = el("div", {"class": "shc-explorer-histogram"});
  var heatS = el("canvas", {"class": "shc-explorer-S", width: 200, height: 200, title: "S"});
  var heatG = el("canvas", {"class": "shc-explorer-gram", width: 200, height: 200, title: "H H^T / q"});
  function captioned(node, text) { var d = el("div"); d.appendChild(node); d.appendChild(el("div", {style: "text-align:center"}, text)); return d; }
  figures.appendChild(captioned(hist, "pairwise Hamming distances (solid: d_min; dashed red: the d the method was asked for; dotted grey: GV d, when none was asked)"));
  figures.appendChild(captioned(heatS, "S"));
  figures.appendChild(captioned(heatG, "H H\u1d40 / q"));
  var legend = el("div"); legend.innerHTML = scale(); figures.appendChild(captioned(legend, "value"));
  var nearest = el("table", {"class": "shc-explorer-nearest"});
  var note = el("p", {"class": "shc-explorer-note"});
  [summary, figures, note, nearest].forEach(function (n) { host.appendChild(n); });
  var state = null;

  function colour(v) {  // RdBu-like: -1 blue, 0 white, +1 red
    var t = Math.max(-1, Math.min(1, v)), r, g, b;
    if (t >= 0) { r = 255; g = Math.round(255 * (1 - t)); b = Math.round(255 * (1 - t)); } else { r = Math.round(255 * (1 + t)); g = Math.round(255 * (1 + t)); b = 255; }
    return [r, g, b];
  }
  function heatmap(canvas, M) {
    var n = M.length, ctx = canvas.getContext("2d"), image = ctx.createImageData(n, n);
    for (var i = 0; i < n; i++) { for (var j = 0; j < n; j++) { var p = colour(M[i][j]), o = 4 * (i * n + j); image.data[o] = p[0]; image.data[o + 1] = p[1]; image.data[o + 2] = p[2]; image.data[o + 3] = 255; } }
    var off = document.createElement("canvas"); off.width = n; off.height = n; off.getContext("2d").putImageData(image, 0, 0);
    ctx.imageSmoothingEnabled = false; ctx.clearRect(0, 0, canvas.width, canvas.height); ctx.drawImage(off, 0, 0, canvas.width, canvas.height);
  }
  function histogram(counts, dmin, d, gv) {  // d: the distance the method was asked for (0: none)
    // the left margin holds the y title (centred at x = 10) and the widest count (about 6 units a digit), so that a
    // five-digit count (C = 333: 55,278 pairs) does not run into the title
    var top = Math.max.apply(null, counts) || 1, L = 22 + 6 * String(top).length;
    var B = 30, W = 360, Hh = 220, w = W - L - 8, h = Hh - B - 8, q = counts.length - 1;
    var bw = w / (q + 1), x0 = function (x) { return L + x * bw; };
    var svg = '<svg xmlns="http://www.w3.org/2000/svg" width="' + W + '" height="' + Hh + '" role="img" aria-label="histogram of the ' +
      'pairwise Hamming distances of the centers: x the distance in bits, y the number of pairs" font-size="10">';
    counts.forEach(function (n, x) { var bh = h * n / top; svg += '<rect x="' + x0(x) + '" y="' + (8 + h - bh) + '" width="' + Math.max(1, bw - 1) + '" height="' + bh + '" fill="#4c72b0"><title>' + x + ' bits: ' + n + ' pairs</title></rect>'; });
    svg += '<line x1="' + L + '" x2="' + (L + w) + '" y1="' + (8 + h) + '" y2="' + (8 + h) + '" stroke="#000"/>';
    svg += '<line x1="' + L + '" x2="' + L + '" y1="8" y2="' + (8 + h) + '" stroke="#000"/>';
    var step = Math.max(1, Math.ceil((q + 1) / 8));
    for (var t = 0; t <= q; t += step) { svg += '<text x="' + (x0(t) + bw / 2) + '" y="' + (8 + h + 12) + '" text-anchor="middle">' + t + '</text>'; }
    [0, Math.round(top / 2), top].forEach(function (v) { var y = 8 + h - h * v / top; svg += '<text x="' + (L - 4) + '" y="' + (y + 3) + '" text-anchor="end">' + v + '</text>'; });
    svg += '<text x="' + (L + w / 2) + '" y="' + (Hh - 2) + '" text-anchor="middle">Hamming distance (bits)</text>';
    svg += '<text transform="translate(10,' + (8 + h / 2) + ') rotate(-90)" text-anchor="middle">pairs of centers</text>';
    var mark = function (v, colour, dash, label) {
      var x = x0(v) + bw / 2;
      return '<line x1="' + x + '" x2="' + x + '" y1="8" y2="' + (8 + h) + '" stroke="' + colour + '"' + (dash ? ' stroke-dasharray="' + dash + '"' : '') + '><title>' + label + '</title></line>';
    };
    svg += mark(dmin, "#000", "", "d_min = " + dmin);
    svg += d > 0 ? mark(d, "#c44e52", "4 3", "required d = " + d) : mark(gv, "#999", "1 3", "GV d = " + gv + " (not asked of this method)");
    return svg + "</svg>";
  }
  function scale() {  // the colour scale of both heatmaps: -1 .. +1
    // the bar runs from y = 8 to 208 and the labels sit inside the 216-unit box, which the viewBox scales with the
    // element: a page's CSS that narrows it (max-width) shrinks the labels with the bar instead of cutting them off
    var svg = '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="216" viewBox="0 0 40 216" role="img" aria-label="colour scale from -1 (blue) through 0 (white) to +1 (red)" font-size="10">';
    for (var i = 0; i < 100; i++) { var p = colour(1 - i / 49.5); svg += '<rect x="0" y="' + (8 + 2 * i) + '" width="12" height="2" fill="rgb(' + p.join(",") + ')"/>'; }
    [["+1", 12], ["0", 112], ["-1", 212]].forEach(function (t) { svg += '<text x="16" y="' + t[1] + '">' + t[0] + '</text>'; });
    return svg + "</svg>";
  }
  function row(table, cells, header) {
    var tr = el("tr"); cells.forEach(function (v) { tr.appendChild(el(header ? "th" : "td", {}, String(v))); }); table.appendChild(tr);
  }
  function showNearest() {
    if (!state) { return; }
    var i = state.names.indexOf(k[1].value), H = state.H, Q = state.q;
    nearest.textContent = "";
    row(nearest, ["rank", "class nearest to " + k[1].value, "Hamming distance", "S"], true);
    var order = [];
    for (var j = 0; j < H.length; j++) { if (j !== i) { order.push([state.D[i][j], j]); } }
    order.sort(function (a, b) { return a[0] - b[0] || a[1] - b[1]; });
    order.slice(0, 5).forEach(function (p, r) { row(nearest, [r + 1, state.names[p[1]], p[0], state.S[i][p[1]].toFixed(2)]); });
  }
  function render() {
    var C = Number(c[1].value), Q = Number(q[1].value), method = m[1].value, key = C + "/" + Q + "/" + method;
    var view = data.views[key], sim = data.similarities[String(C)];
    summary.textContent = ""; nearest.textContent = ""; hist.innerHTML = "";
    if (!view) { note.textContent = "not precomputed: " + C + " classes do not fit in " + Q + " bits"; state = null; return; }
    var H = centers(view.centers, C, Q), S = similarity(sim.S, C), D = [], G = [], counts = new Array(Q + 1).fill(0), dmin = Q;
    for (var i = 0; i < C; i++) {
      D.push(new Array(C)); G.push(new Array(C));
      for (var j = 0; j < C; j++) {
        var dot = 0; for (var b = 0; b < Q; b++) { dot += H[i][b] * H[j][b]; }
        D[i][j] = (Q - dot) / 2; G[i][j] = dot / Q;
        if (j > i) { counts[D[i][j]] += 1; dmin = Math.min(dmin, D[i][j]); }
      }
    }
    var sm = view.summary, d = sm["required d"], gv = sm["GV d"];  // required d 0: the method is asked for none
    row(summary, ["C", "q", "method", "GV d", "required d", "d_min", "colliding pairs", "mean distance", "S_loss", "Spearman"], true);
    row(summary, [C, Q, method, sm["GV d"], sm["required d"], dmin, counts[0], sm["mean distance"], sm["S_loss"],
                  sm["Spearman"] === null ? "undefined (constant)" : sm["Spearman"]]);
    hist.innerHTML = histogram(counts, dmin, d, gv);
    heatmap(heatS, S); heatmap(heatG, G);
    note.textContent = "d_min = " + dmin + (d > 0 ? (dmin >= d ? " \u2265 " : " < ") + "required d = " + d
      : " (this method is asked for no minimum distance; the GV d is " + gv + ")") + " (" + data.source + " S, seed " + data.seed + ")";
    state = {H: H, S: S, D: D, q: Q, names: sim.names};
    var chosen = k[1].value;
    k[1].textContent = "";
    sim.names.forEach(function (name) { var o = el("option", {value: name}, name); k[1].appendChild(o); });
    k[1].value = sim.names.indexOf(chosen) >= 0 ? chosen : sim.names[0];
    showNearest();
    root.setAttribute("data-view", key);
  }
  [c[1], q[1], m[1]].forEach(function (s) { s.addEventListener("change", render); });
  k[1].addEventListener("change", showNearest);
  render();
})();
