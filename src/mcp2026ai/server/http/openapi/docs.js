// Swagger UI for /openapi.json; no validator (it would send the description off the host).
window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#swagger-ui", validatorUrl: null, deepLinking: true });
