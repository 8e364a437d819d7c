// The service's API reference, drawn from its own /openapi.json: no build step, no network
// beyond the service itself (the page works on a machine without internet). Every value from
// the document is inserted as text, never as HTML (el, from ../dom.js).
"use strict";

// A JSON schema as a short type: resolves $ref to the component's name, unions with " | ".
function typeOf(schema) {
  if (!schema) return "";
  if (schema.$ref) return schema.$ref.split("/").pop();
  const union = schema.anyOf || schema.oneOf;
  if (union) return union.map(typeOf).join(" | ");
  if (schema.type === "array") return `array of ${typeOf(schema.items)}`;
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  return schema.type || "any";
}

function resolve(doc, schema) {
  if (schema && schema.$ref) {
    const name = schema.$ref.split("/").pop();
    return ((doc.components || {}).schemas || {})[name] || {};
  }
  return schema || {};
}

function table(head, rows) {
  return el(
    "table",
    {},
    el("thead", {}, el("tr", {}, ...head.map((h) => el("th", { text: h })))),
    el("tbody", {}, ...rows.map((r) => el("tr", {}, ...r.map((c) => el("td", { text: c }))))),
  );
}

function parameters(op) {
  const params = op.parameters || [];
  if (!params.length) return null;
  return table(
    ["parameter", "in", "type", "required", "description"],
    params.map((p) => [
      p.name,
      p.in,
      typeOf(p.schema),
      p.required ? "yes" : "no",
      p.description || (p.schema && p.schema.description) || "",
    ]),
  );
}

function body(doc, op) {
  const content = ((op.requestBody || {}).content || {})["application/json"];
  if (!content) return null;
  const schema = resolve(doc, content.schema);
  const required = new Set(schema.required || []);
  const rows = Object.entries(schema.properties || {}).map(([name, prop]) => [
    name,
    typeOf(prop),
    required.has(name) ? "yes" : "no",
    prop.description || prop.title || "",
  ]);
  return el(
    "div",
    {},
    el("p", { text: `JSON body: ${typeOf(content.schema)}` }),
    rows.length ? table(["field", "type", "required", "description"], rows) : null,
  );
}

function responses(op) {
  const codes = Object.entries(op.responses || {}).map(([code, r]) => `${code} ${r.description}`);
  return codes.length ? el("p", { text: `Responses: ${codes.join("; ")}` }) : null;
}

function render(doc) {
  document.title = `${doc.info.title} API`;
  document.getElementById("version").textContent = `version ${doc.info.version}`;
  document.getElementById("description").textContent = doc.info.description || "";
  const list = document.getElementById("endpoints");
  const blocks = [];
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const [method, op] of Object.entries(item)) {
      blocks.push(
        el(
          "section",
          { className: "endpoint", role: "listitem", "data-endpoint": `${method.toUpperCase()} ${path}` },
          el(
            "h2",
            {},
            el("span", { className: `method ${method}`, text: method.toUpperCase() }),
            el("span", { text: path }),
          ),
          el("p", { className: "summary", text: op.summary || "" }),
          parameters(op),
          body(doc, op),
          responses(op),
        ),
      );
    }
  }
  list.replaceChildren(...blocks);
  document.body.dataset.loaded = String(blocks.length);
}

fetch("../openapi.json")
  .then((r) => {
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    return r.json();
  })
  .then(render)
  .catch((e) => {
    document.getElementById("endpoints").textContent = `cannot load ../openapi.json: ${e}`;
  });
