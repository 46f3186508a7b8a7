// The model page's chart: every measured candidate at (throughput, expected p99), the Pareto front
// joined by a line, the chosen plan drawn large. Points come with the fragment (#plan-points).
(function () {
  "use strict";
  window.mcpCharts = window.mcpCharts || {};

  function draw() {
    const source = document.getElementById("plan-points");
    const canvas = document.getElementById("plan-chart");
    if (!source || !canvas || typeof Chart === "undefined") return;
    const points = JSON.parse(source.textContent);
    const xy = function (p) { return { x: p.throughput_rps, y: p.p99_ms, plan: p.plan, why: p.why }; };
    const front = points.filter(function (p) { return p.front; }).map(xy).sort(function (a, b) { return a.x - b.x; });
    if (window.mcpCharts.plan) window.mcpCharts.plan.destroy();
    window.mcpCharts.plan = new Chart(canvas, {
      type: "scatter",
      data: {
        datasets: [
          { label: "chosen plan", data: points.filter(function (p) { return p.chosen; }).map(xy),
            pointRadius: 10, pointStyle: "star", borderColor: "#b3261e", backgroundColor: "#b3261e", borderWidth: 3 },
          { label: "Pareto front", data: front, showLine: true, borderColor: "#1b6ac9", backgroundColor: "#1b6ac9", pointRadius: 5 },
          { label: "feasible", data: points.filter(function (p) { return p.feasible && !p.front; }).map(xy),
            borderColor: "#2e7d32", backgroundColor: "#2e7d32", pointRadius: 4 },
          { label: "infeasible", data: points.filter(function (p) { return !p.feasible && !p.front; }).map(xy),
            borderColor: "#8a8a8a", backgroundColor: "#8a8a8a", pointStyle: "crossRot", pointRadius: 5 }
        ]
      },
      options: {
        animation: false,
        maintainAspectRatio: false,
        scales: {
          x: { title: { display: true, text: "throughput (rows/s)" } },
          y: { title: { display: true, text: "expected p99 (ms)" } }
        },
        plugins: { tooltip: { callbacks: { label: function (c) { return c.raw.plan + ": " + c.raw.why; } } } }
      }
    });
    canvas.dataset.chosen = String(window.mcpCharts.plan.data.datasets[0].data.length);
  }

  document.addEventListener("htmx:afterSettle", draw);
})();
