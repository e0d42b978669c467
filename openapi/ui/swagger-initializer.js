// Starts Swagger UI on baton's own OpenAPI document. It lives in its own
// file, not inline in index.html, so that /docs can forbid inline scripts.
window.addEventListener("load", function () {
  "use strict";
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    tryItOutEnabled: true,
    // BaseLayout, not the standalone one: no top bar for loading other
    // documents, and no badge that calls an online validator.
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    validatorUrl: null,
    // "Try it out" must reach the node that served this page (the only
    // origin the page's CSP allows to connect to), whatever host the
    // document's servers name.
    requestInterceptor: function (req) {
      var u = new URL(req.url, window.location.href);
      if (u.origin !== window.location.origin) {
        req.url = window.location.origin + u.pathname + u.search + u.hash;
      }
      return req;
    }
  });
});
