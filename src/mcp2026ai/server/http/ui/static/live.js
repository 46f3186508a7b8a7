// The Live page: polls /ui/api/live (the server's own counters, gauges and histogram buckets) once a
// second while the tab is visible and draws the differences: rates, quantiles of the last second.
(function () {
  "use strict";
  const POINTS = 90;
  const PERIOD_MS = 1000;
  const COLORS = ["#1b6ac9", "#b3261e", "#2e7d32", "#8e44ad", "#b35c00", "#00838f", "#5d4037"];
  const charts = {};
  window.mcpCharts = window.mcpCharts || {};
  let previous = null;
  let timer = null;

  function lineChart(id, yTitle) {
    return new Chart(document.getElementById(id), {
      type: "line",
      data: { labels: [], datasets: [] },
      options: {
        animation: false, maintainAspectRatio: false, spanGaps: true,
        elements: { point: { radius: 0 } },
        scales: { y: { beginAtZero: true, title: { display: true, text: yTitle } } }
      }
    });
  }

  function dataset(chart, label) {
    let found = chart.data.datasets.find(function (d) { return d.label === label; });
    if (!found) {
      const color = COLORS[chart.data.datasets.length % COLORS.length];
      found = { label: label, data: new Array(chart.data.labels.length).fill(null), borderColor: color, backgroundColor: color, borderWidth: 2 };
      chart.data.datasets.push(found);
    }
    return found;
  }

  // One new point per chart: values is {label: number|null}; datasets not named get a gap.
  function push(chart, time, values) {
    chart.data.labels.push(time);
    Object.keys(values).forEach(function (label) { dataset(chart, label); });
    chart.data.datasets.forEach(function (d) {
      d.data.push(Object.prototype.hasOwnProperty.call(values, d.label) ? values[d.label] : null);
      if (d.data.length > POINTS) d.data.shift();
    });
    if (chart.data.labels.length > POINTS) chart.data.labels.shift();
    chart.update("none");
  }

  function rate(now, before, dt) { return Math.max(0, (now - (before || 0)) / dt); }

  // The q-quantile of the observations between two cumulative bucket snapshots (linear within a bucket).
  function quantile(q, now, before) {
    const counts = now.counts.map(function (c, i) { return c - (before ? before.counts[i] || 0 : 0); });
    const total = counts[counts.length - 1];
    if (!total) return null;
    const target = q * total;
    for (let i = 0; i < counts.length; i++) {
      if (counts[i] >= target) {
        const upper = now.le[i];
        const lower = i > 0 ? now.le[i - 1] : 0;
        if (upper === null) return lower;
        const below = i > 0 ? counts[i - 1] : 0;
        const inside = counts[i] - below;
        return lower + (upper - lower) * (inside ? (target - below) / inside : 1);
      }
    }
    return null;
  }

  function each(now, before, name, fn) {
    const out = {};
    const groups = now[name] || {};
    Object.keys(groups).forEach(function (key) { fn(out, key || "-", groups[key], (before[name] || {})[key]); });
    return out;
  }

  function draw(now, before) {
    const dt = Math.max(0.001, now.time - before.time);
    const time = new Date(now.time * 1000).toLocaleTimeString();
    push(charts.rps, time, each(now, before, "requests", function (o, k, v, b) { o[k] = rate(v, b, dt); }));
    push(charts.latency, time, each(now, before, "mcp_request_duration_seconds", function (o, k, v, b) {
      const p50 = quantile(0.5, v, b), p99 = quantile(0.99, v, b);
      o[k + " p50"] = p50 === null ? null : p50 * 1000;
      o[k + " p99"] = p99 === null ? null : p99 * 1000;
    }));
    const queue = each(now, before, "mcp_scheduler_queue_depth", function (o, k, v) { o[k + " queued"] = v; });
    push(charts.queue, time, Object.assign(queue, each(now, before, "refusals", function (o, k, v, b) { o[k + " refused/s"] = rate(v, b, dt); })));
    push(charts.batch, time, each(now, before, "mcp_scheduler_batch_rows", function (o, k, v, b) {
      const count = v.counts[v.counts.length - 1] - (b ? b.counts[b.counts.length - 1] : 0);
      o["rows per batch"] = count > 0 ? (v.sum - (b ? b.sum : 0)) / count : null;
    }));
    push(charts.tokens, time, each(now, before, "mcp_generation_tokens", function (o, k, v, b) { o[k] = rate(v, b, dt); }));
    const ttft = each(now, before, "mcp_generation_time_to_first_token_seconds", function (o, k, v, b) {
      const q = quantile(0.5, v, b); o[k + " TTFT"] = q === null ? null : q * 1000;
    });
    push(charts.ttft, time, Object.assign(ttft, each(now, before, "mcp_generation_inter_token_latency_seconds", function (o, k, v, b) {
      const q = quantile(0.5, v, b); o[k + " ITL"] = q === null ? null : q * 1000;
    })));
    const kv = each(now, before, "mcp_generation_kv_cache_usage_ratio", function (o, k, v) { o[k + " KV used"] = v * 100; });
    push(charts.kv, time, Object.assign(kv, each(now, before, "mcp_generation_prefix_cache_hit_tokens", function (o, k, v, b) {
      const prompt = (now.mcp_generation_prompt_tokens || {})[k] || 0;
      const promptBefore = (before.mcp_generation_prompt_tokens || {})[k] || 0;
      o[k + " prefix hits"] = prompt > promptBefore ? 100 * (v - (b || 0)) / (prompt - promptBefore) : null;
    })));
  }

  async function poll() {
    if (document.visibilityState !== "visible") return;
    try {
      const now = await (await window.mcpFetch("/ui/api/live")).json();
      if (previous) draw(now, previous);
      previous = now;
      document.getElementById("live-status").textContent = "updated " + new Date(now.time * 1000).toLocaleTimeString();
    } catch (error) {
      document.getElementById("live-status").textContent = "not updated: " + error.message;
    }
  }

  document.addEventListener("mcp:ready", function () {
    charts.rps = lineChart("chart-rps", "requests/s");
    charts.latency = lineChart("chart-latency", "ms");
    charts.queue = lineChart("chart-queue", "requests");
    charts.batch = lineChart("chart-batch", "rows");
    charts.tokens = lineChart("chart-tokens", "tokens/s");
    charts.ttft = lineChart("chart-ttft", "ms");
    charts.kv = lineChart("chart-kv", "%");
    Object.assign(window.mcpCharts, charts);
    poll();
    timer = window.setInterval(poll, PERIOD_MS);
  });
  window.addEventListener("pagehide", function () { if (timer) window.clearInterval(timer); });
})();
