// The console's session: the API token lives in sessionStorage only (this tab), goes out as a bearer
// header on every htmx request and every fetch, and "mcp:ready" on <body> tells the page's parts to load.
(function () {
  "use strict";
  const KEY = "mcp-token";
  window.mcpReady = false;

  function token() { return sessionStorage.getItem(KEY); }

  function headers(extra) {
    const result = Object.assign({}, extra || {});
    const value = token();
    if (value) result.Authorization = "Bearer " + value;
    return result;
  }

  // fetch() with the token; the server's error JSON ({"error": ...}) becomes an Error with .status.
  async function mcpFetch(url, options) {
    const opts = Object.assign({}, options || {});
    opts.headers = headers(opts.headers);
    const response = await fetch(url, opts);
    if (!response.ok) {
      let message = response.statusText;
      try { message = (await response.json()).error || message; } catch (ignored) { /* not JSON */ }
      const error = new Error(response.status + ": " + message);
      error.status = response.status;
      if (response.status === 401) { sessionStorage.removeItem(KEY); showLogin("Token refused: " + message); }
      throw error;
    }
    return response;
  }
  window.mcpFetch = mcpFetch;

  function flash(text) {
    const box = document.getElementById("flash");
    if (box) box.textContent = text;
  }
  window.mcpFlash = flash;

  function showLogin(message) {
    document.getElementById("content").hidden = true;
    document.getElementById("login").hidden = false;
    document.getElementById("login-error").textContent = message || "";
    document.getElementById("token").focus();
  }

  async function start() {
    let who;
    try {
      who = await (await mcpFetch("/ui/api/session")).json();
    } catch (error) {
      if (error.status !== 401) flash("Cannot reach the server: " + error.message);
      return;
    }
    document.getElementById("login").hidden = true;
    document.getElementById("content").hidden = false;
    document.getElementById("who").textContent = who.name + " (" + who.scopes.join(", ") + ")";
    document.getElementById("sign-out").hidden = !token();
    document.body.dataset.scopes = who.scopes.join(",");
    window.mcpReady = true;
    document.body.dispatchEvent(new CustomEvent("mcp:ready", { bubbles: true }));
  }

  document.addEventListener("htmx:configRequest", function (event) {
    Object.assign(event.detail.headers, headers());
  });
  document.addEventListener("htmx:beforeRequest", function () { flash(""); });
  document.addEventListener("htmx:responseError", function (event) {
    const xhr = event.detail.xhr;
    let message = xhr.statusText;
    try { message = JSON.parse(xhr.responseText).error || message; } catch (ignored) { /* not JSON */ }
    if (xhr.status === 401) { sessionStorage.removeItem(KEY); showLogin("Token refused: " + message); return; }
    flash(xhr.status + ": " + message);
  });
  document.addEventListener("htmx:sendError", function () { flash("Cannot reach the server."); });

  document.addEventListener("DOMContentLoaded", function () {
    document.getElementById("login").addEventListener("submit", function (event) {
      event.preventDefault();
      sessionStorage.setItem(KEY, document.getElementById("token").value.trim());
      document.getElementById("token").value = "";
      start();
    });
    document.getElementById("sign-out").addEventListener("click", function () {
      sessionStorage.removeItem(KEY);
      window.location.reload();
    });
    if (document.body.dataset.authRequired === "true" && !token()) showLogin("");
    else start();
  });
})();
