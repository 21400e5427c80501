// Portico's API reference: one Swagger UI over every published document
// (the list comes from /openapi/index.json), "Try it out" against this server.
fetch("/openapi/index.json")
  .then((response) => response.json())
  .then((documents) => {
    window.ui = SwaggerUIBundle({
      urls: documents.map((d) => ({ url: d.url, name: d.title + " " + d.version })),
      dom_id: "#reference",
      deepLinking: true,
      presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
      layout: "StandaloneLayout",
      persistAuthorization: true,
      tryItOutEnabled: true,
    });
  });
