// aeromq console: the rate and lag charts (uPlot), fed by /console/api/series every 2 s.
// Each chart's element gets data-points (samples drawn), data-series (lines) and data-max (the
// largest value drawn) once drawn: what an operator's eye and the browser tests check.
(function () {
  "use strict";
  var PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2"];
  var charts = {};

  function draw(id, title, times, lines) {
    var element = document.getElementById(id);
    if (!element) { return; }
    var names = Object.keys(lines).sort();
    var data = [times].concat(names.map(function (n) { return lines[n]; }));
    var key = names.join("|");
    var chart = charts[id];
    if (chart && chart.key === key) {
      chart.plot.setData(data);
    } else {
      if (chart) { chart.plot.destroy(); }
      var series = [{}].concat(names.map(function (n, i) {
        return {label: n, stroke: PALETTE[i % PALETTE.length], width: 2};
      }));
      var width = Math.max(320, element.clientWidth || 640);
      var plot = new uPlot({title: title, width: width, height: 240, series: series}, data, element);
      charts[id] = {plot: plot, key: key};
    }
    element.setAttribute("data-points", String(times.length));
    element.setAttribute("data-series", String(names.length));
    var max = 0;
    names.forEach(function (n) { lines[n].forEach(function (v) { max = Math.max(max, v); }); });
    element.setAttribute("data-max", String(max));
  }

  function refresh() {
    fetch("/console/api/series").then(function (r) { return r.json(); }).then(function (s) {
      draw("rates-chart", "messages / s", s.time_s, s.rates);
      draw("lag-chart", "lag (messages)", s.time_s, s.lag);
    }).catch(function () { /* the broker is stopping: the next tick tries again */ });
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (document.getElementById("rates-chart") || document.getElementById("lag-chart")) {
      refresh();
      setInterval(refresh, 2000);
    }
  });
})();
