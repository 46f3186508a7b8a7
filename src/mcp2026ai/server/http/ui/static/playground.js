// The Playground: a streamed chat through the server's own /v1/chat/completions (tokens/s shown as
// it streams), and tensor models through /v1/infer (an uploaded image) or /v2/models/<m>/infer (JSON).
// A model answering lines (text, scores, boxes: the OCR pipeline) gets them as a table and drawn on
// the image.
(function () {
  "use strict";
  const history = [];
  let controller = null;

  function number(id) {
    const value = document.getElementById(id).value;
    return value === "" ? undefined : Number(value);
  }

  function bubble(role, text) {
    const item = document.createElement("div");
    item.className = "msg " + role;
    const who = document.createElement("strong");
    who.textContent = role === "user" ? "you: " : "model: ";
    const body = document.createElement("span");
    body.textContent = text;
    item.append(who, body);
    document.getElementById("chat-log").append(item);
    return body;
  }

  // Server-sent events of a streamed chat completion: calls onDelta(text) per content delta.
  async function readStream(response, onDelta) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const event = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        event.split("\n").forEach(function (line) {
          if (!line.startsWith("data:")) return;
          const data = line.slice(5).trim();
          if (data === "[DONE]") return;
          const chunk = JSON.parse(data);
          if (chunk.error) throw new Error(chunk.error.message || String(chunk.error));
          const delta = ((chunk.choices || [])[0] || {}).delta || {};
          if (delta.content) onDelta(delta.content);
        });
      }
    }
  }

  async function chat(event) {
    event.preventDefault();
    const input = document.getElementById("chat-input");
    const speed = document.getElementById("chat-speed");
    const text = input.value.trim();
    if (!text) return;
    history.push({ role: "user", content: text });
    bubble("user", text);
    input.value = "";
    const body = bubble("assistant", "");
    const request = {
      model: document.getElementById("chat-model").value, messages: history, stream: true,
      temperature: number("temperature"), top_p: number("top_p"), max_tokens: number("max_tokens"), seed: number("seed")
    };
    controller = new AbortController();
    document.getElementById("chat-send").disabled = true;
    document.getElementById("chat-stop").disabled = false;
    let pieces = 0, first = null;
    const started = performance.now();
    try {
      const response = await window.mcpFetch("/v1/chat/completions", {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(request), signal: controller.signal
      });
      await readStream(response, function (delta) {
        body.textContent += delta;
        pieces += 1;
        first = first || performance.now();
        const seconds = (performance.now() - first) / 1000;
        speed.textContent = pieces + " tokens, " + (seconds > 0 ? (pieces - 1) / seconds : 0).toFixed(1) +
          " tokens/s, first after " + Math.round(first - started) + " ms";
        speed.dataset.chunks = String(pieces);
      });
      history.push({ role: "assistant", content: body.textContent });
    } catch (error) {
      if (error.name !== "AbortError") speed.textContent = "failed: " + error.message;
    } finally {
      document.getElementById("chat-send").disabled = false;
      document.getElementById("chat-stop").disabled = true;
      controller = null;
    }
  }

  function fileAsBase64(file) {
    return new Promise(function (resolve, reject) {
      const reader = new FileReader();
      reader.onload = function () { resolve(String(reader.result).split(",")[1]); };
      reader.onerror = function () { reject(reader.error); };
      reader.readAsDataURL(file);
    });
  }

  function selectedModel() {
    const select = document.getElementById("infer-model");
    return select.options[select.selectedIndex];
  }

  function showInputs() {
    const option = selectedModel();
    const image = option.dataset.image === "true";
    document.getElementById("image-input").hidden = !image;
    document.getElementById("json-input").hidden = image;
    if (!image) document.getElementById("infer-json").value = option.dataset.example;
  }

  // Lines read from an image: outputs text[i], scores[i], boxes[i] (4 corners, x then y).
  function lines(answer) {
    const outputs = answer.outputs;
    if (!outputs || Array.isArray(outputs) || !Array.isArray(outputs.text)) return null;
    return outputs.text.map(function (text, index) {
      return { text: text, score: (outputs.scores || [])[index], box: (outputs.boxes || [])[index] };
    });
  }

  function showLines(found, file) {
    const holder = document.getElementById("infer-lines");
    const body = document.querySelector("#infer-lines-table tbody");
    body.replaceChildren();
    found.forEach(function (line, index) {
      const row = document.createElement("tr");
      const cells = [String(index), line.text, line.score === undefined ? "" : line.score.toFixed(4),
        (line.box || []).map(function (p) { return "(" + Math.round(p[0]) + ", " + Math.round(p[1]) + ")"; }).join(" ")];
      cells.forEach(function (value) {
        const cell = document.createElement("td");
        cell.textContent = value;
        row.append(cell);
      });
      body.append(row);
    });
    holder.hidden = false;
    drawBoxes(found, file);
  }

  function drawBoxes(found, file) {
    const canvas = document.getElementById("infer-canvas");
    const picture = new Image();
    const address = URL.createObjectURL(file);
    picture.onload = function () {
      const scale = Math.min(1, 520 / picture.naturalWidth, 240 / picture.naturalHeight);
      canvas.width = Math.round(picture.naturalWidth * scale);
      canvas.height = Math.round(picture.naturalHeight * scale);
      const context = canvas.getContext("2d");
      context.drawImage(picture, 0, 0, canvas.width, canvas.height);
      context.strokeStyle = "#d0021b";
      context.lineWidth = 2;
      found.forEach(function (line) {
        if (!line.box || line.box.length !== 4) return;
        context.beginPath();
        line.box.forEach(function (p, i) {
          if (i === 0) context.moveTo(p[0] * scale, p[1] * scale); else context.lineTo(p[0] * scale, p[1] * scale);
        });
        context.closePath();
        context.stroke();
      });
      URL.revokeObjectURL(address);
    };
    picture.src = address;
  }

  function describe(answer) {
    if (answer.predictions) {
      return answer.predictions.map(function (p) { return p.label + " " + (100 * p.score).toFixed(1) + "%"; }).join(", ");
    }
    return (answer.outputs || []).map(function (o) { return o.name + " = " + JSON.stringify(o.data).slice(0, 200); }).join("; ");
  }

  async function infer(event) {
    event.preventDefault();
    const result = document.getElementById("infer-result");
    const option = selectedModel();
    const input = document.getElementById("image-file");
    const file = input.files[0];
    document.getElementById("infer-lines").hidden = true;
    result.textContent = "running…";
    try {
      let response;
      if (option.dataset.image === "true") {
        if (!file) { result.textContent = "choose an image first"; return; }
        const limit = Number(input.dataset.maxBytes);
        if (limit && file.size > limit) {
          result.textContent = file.name + " is " + file.size + " bytes; this server takes images of at most " + limit + " bytes";
          return;
        }
        const body = { model: option.value, image: await fileAsBase64(file), top_k: 2 };
        response = await window.mcpFetch("/v1/infer", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
      } else {
        const url = "/v2/models/" + encodeURIComponent(option.value) + "/infer";
        const body = document.getElementById("infer-json").value;
        response = await window.mcpFetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: body });
      }
      const answer = await response.json();
      const found = lines(answer);
      if (found === null) { result.textContent = describe(answer); return; }
      result.textContent = found.length + (found.length === 1 ? " line" : " lines") + " read by " + answer.model + " " + answer.version;
      showLines(found, file);
    } catch (error) {
      result.textContent = "failed: " + error.message;
    }
  }

  // Delegated from the document: the forms arrive later (htmx swaps them in) and work at once.
  document.addEventListener("submit", function (event) {
    if (event.target.id === "chat-form") chat(event);
    else if (event.target.id === "infer-form") infer(event);
  });
  document.addEventListener("click", function (event) {
    if (event.target.id === "chat-stop" && controller) controller.abort();
  });
  document.addEventListener("change", function (event) {
    if (event.target.id === "infer-model") showInputs();
  });
  document.addEventListener("htmx:afterSwap", function () {
    if (document.getElementById("infer-model")) showInputs();
  });
})();
