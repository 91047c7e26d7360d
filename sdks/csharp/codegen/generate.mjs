// Generates the C# SDK's model classes from the OpenAPI document's components.schemas:
//
//   node sdks/csharp/codegen/generate.mjs sdks/openapi.json sdks/csharp/Runtime/Generated/Models.g.cs
//
// Node's standard library only. One class per object schema (the properties of an allOf
// merged), one enum per string enum (with `Unknown` for a value a newer api adds), one class
// per oneOf of several shapes (`Submitted`: one property per shape). Every class reads itself
// from the tree Json.Parse gives (`FromJson`) and writes the tree Json.Serialize takes
// (`ToJson`): no reflection, so IL2CPP's stripping keeps working. A shape it does not know is
// kept as the raw JSON tree (`object`), never refused: a newer document still generates. The
// output depends on the document only (schemas in name order, properties in document order).
// C# 7.2 at most: mcs compiles it, and Unity 2021.2 and later.

import { readFileSync, writeFileSync } from "node:fs";

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error("usage: node generate.mjs <openapi.json> <Models.g.cs>");
  process.exit(2);
}
const doc = JSON.parse(readFileSync(input, "utf8"));
const schemas = doc.components?.schemas ?? {};

const pascal = (s) =>
  s.split(/[^A-Za-z0-9]+/).filter(Boolean).map((w) => w[0].toUpperCase() + w.slice(1)).join("")
    .replace(/^(\d)/, "_$1");
const refName = (ref) => ref.split("/").pop();
const xml = (s) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

const isEnum = (s) => s && Array.isArray(s.enum) && (s.type === "string" || s.enum.every((v) => typeof v === "string"));
const alternatives = (s) => (s.oneOf ?? s.anyOf ?? []).filter((a) => a.type !== "null");
const isUnion = (s) => s && alternatives(s).length > 1;

/** The C# type of a schema and how to read and write a value of it. */
function resolve(s) {
  if (!s || typeof s !== "object") return raw();
  if (s.$ref) {
    const name = refName(s.$ref);
    const target = schemas[name];
    // Qualified in code: a property may have its type's name (ReviewPage.Held is a List<Held>).
    const q = `global::Ledgerboard.Client.Models.${name}`;
    if (isEnum(target)) {
      return { type: name, value: true, read: (v) => `${q}Json.Parse(JsonRead.String(${v}))`, write: (x) => `${q}Json.ToJson(${x})` };
    }
    return { type: name, value: false, read: (v) => `${q}.FromJson(${v})`, write: (x) => `${x}.ToJson()` };
  }
  const alts = alternatives(s);
  if (alts.length === 1 && (s.oneOf || s.anyOf)) return resolve(alts[0]);
  if (alts.length > 1) return raw();
  if (Array.isArray(s.allOf) && s.allOf.length === 1) return resolve(s.allOf[0]);
  let type = s.type;
  if (Array.isArray(type)) {
    type = type.filter((t) => t !== "null");
    type = type.length === 1 ? type[0] : undefined;
  }
  switch (type) {
    case "string":
      return { type: "string", value: false, read: (v) => `JsonRead.String(${v})`, write: (x) => x };
    case "integer":
      return s.format === "int32"
        ? { type: "int", value: true, read: (v) => `JsonRead.Int(${v})`, write: (x) => x }
        : { type: "long", value: true, read: (v) => `JsonRead.Long(${v})`, write: (x) => x };
    case "number":
      return { type: "double", value: true, read: (v) => `JsonRead.Double(${v})`, write: (x) => x };
    case "boolean":
      return { type: "bool", value: true, read: (v) => `JsonRead.Bool(${v})`, write: (x) => x };
    case "array": {
      const item = resolve(s.items);
      return {
        type: `List<${item.type}>`, value: false,
        read: (v) => `JsonRead.List(${v}, e => ${item.read("e")})`,
        write: (x) => `JsonWrite.List(${x}, e => ${item.write("e")})`,
      };
    }
    case "object": {
      if (s.properties === undefined && typeof s.additionalProperties === "object") {
        const item = resolve(s.additionalProperties);
        return {
          type: `Dictionary<string, ${item.type}>`, value: false,
          read: (v) => `JsonRead.Map(${v}, e => ${item.read("e")})`,
          write: (x) => `JsonWrite.Map(${x}, e => ${item.write("e")})`,
        };
      }
      if (s.properties === undefined) {
        return { type: "Dictionary<string, object>", value: false, read: (v) => `JsonRead.Object(${v})`, write: (x) => x };
      }
      return raw();
    }
    default:
      return raw();
  }
}

function raw() {
  return { type: "object", value: false, read: (v) => v, write: (x) => x };
}

/** The properties of an object schema, an allOf's merged in order, and which are required. */
function properties(s) {
  if (s.$ref) return properties(schemas[refName(s.$ref)] ?? {});
  const props = [];
  const required = new Set(s.required ?? []);
  for (const part of s.allOf ?? []) {
    const inner = properties(part);
    props.push(...inner.props);
    inner.required.forEach((r) => required.add(r));
  }
  for (const [name, schema] of Object.entries(s.properties ?? {})) props.push([name, schema]);
  return { props, required };
}

function summary(text, indent) {
  if (!text) return [];
  const lines = xml(text).split("\n").map((l) => l.trim());
  return [`${indent}/// <summary>`, ...lines.map((l) => `${indent}/// ${l}`.trimEnd()), `${indent}/// </summary>`];
}

function describe(s) {
  if (s.description) return s.description;
  for (const a of s.oneOf ?? s.allOf ?? []) if (a.description) return a.description;
  return undefined;
}

function emitEnum(name, s, out) {
  const members = s.enum.map((v) => [v, pascal(String(v)) || "Empty"]);
  out.push(...summary(s.description, "    "));
  out.push(`    public enum ${name}`, "    {", "        /// <summary>A value this version of the SDK does not know.</summary>", "        Unknown = 0,");
  for (const [v, m] of members) out.push(`        /// <summary><c>${xml(String(v))}</c></summary>`, `        ${m},`);
  out.push("    }", "");
  out.push(`    /// <summary>The JSON spelling of <see cref="${name}"/>.</summary>`);
  out.push(`    public static class ${name}Json`, "    {");
  out.push(`        public static ${name} Parse(string value)`, "        {", "            switch (value)", "            {");
  for (const [v, m] of members) out.push(`                case ${JSON.stringify(String(v))}: return ${name}.${m};`);
  out.push(`                default: return ${name}.Unknown;`, "            }", "        }", "");
  out.push(`        public static string ToJson(${name} value)`, "        {", "            switch (value)", "            {");
  for (const [v, m] of members) out.push(`                case ${name}.${m}: return ${JSON.stringify(String(v))};`);
  out.push("                default: return null;", "            }", "        }", "    }", "");
}

function emitUnion(name, s, out) {
  const shapes = alternatives(s).map((a) => [pascal(`as_${[a.type].flat()[0] ?? "value"}`), a, resolve(a)]);
  out.push(...summary(s.description, "    "));
  out.push(`    public sealed partial class ${name}`, "    {");
  for (const [prop, a, t] of shapes) {
    out.push(...summary(a.description, "        "));
    out.push(`        public ${t.type}${t.value ? "?" : ""} ${prop} { get; set; }`, "");
  }
  out.push(`        public static ${name} FromJson(object json)`, "        {", "            if (json == null) return null;");
  for (const [prop, a, t] of shapes) {
    const test = { integer: "JsonRead.IsInteger(json)", number: "JsonRead.IsNumber(json)", string: "json is string",
      boolean: "json is bool", array: "json is List<object>", object: "json is Dictionary<string, object>" }[[a.type].flat()[0]] ?? "false";
    out.push(`            if (${test}) return new ${name} { ${prop} = ${t.read("json")} };`);
  }
  out.push("            return null;", "        }", "");
  out.push("        public object ToJson()", "        {");
  for (const [prop, , t] of shapes) {
    out.push(t.value ? `            if (${prop}.HasValue) return ${t.write(`${prop}.Value`)};` : `            if (${prop} != null) return ${t.write(prop)};`);
  }
  out.push("            return null;", "        }", "    }", "");
}

function emitClass(name, s, out) {
  const { props, required } = properties(s);
  out.push(...summary(s.description, "    "));
  out.push(`    public sealed partial class ${name}`, "    {");
  const fields = props.map(([json, schema]) => {
    let prop = pascal(json);
    if (prop === name) prop += schema.type === "array" || [schema.type].flat().includes("array") ? "List" : "Value";
    const t = resolve(schema);
    const nullable = [schema.type].flat().includes("null") || (schema.oneOf ?? []).some((a) => a.type === "null");
    const optional = t.value && (nullable || !required.has(json));
    return { json, prop, t, optional, schema };
  });
  for (const f of fields) {
    out.push(...summary(describe(f.schema), "        "));
    out.push(`        public ${f.t.type}${f.optional ? "?" : ""} ${f.prop} { get; set; }`, "");
  }
  out.push(`        public static ${name} FromJson(object json)`, "        {");
  out.push("            var o = json as Dictionary<string, object>;", "            if (o == null) return null;");
  out.push(`            var m = new ${name}();`, "            object v;");
  for (const f of fields) {
    const read = f.t.read("v");
    out.push(`            if (o.TryGetValue(${JSON.stringify(f.json)}, out v) && v != null) m.${f.prop} = ${read};`);
  }
  out.push("            return m;", "        }", "");
  out.push("        public Dictionary<string, object> ToJson()", "        {", "            var o = new Dictionary<string, object>();");
  for (const f of fields) {
    if (f.optional) out.push(`            if (${f.prop}.HasValue) o[${JSON.stringify(f.json)}] = ${f.t.write(`${f.prop}.Value`)};`);
    else if (f.t.value) out.push(`            o[${JSON.stringify(f.json)}] = ${f.t.write(f.prop)};`);
    else out.push(`            if (${f.prop} != null) o[${JSON.stringify(f.json)}] = ${f.t.write(f.prop)};`);
  }
  out.push("            return o;", "        }", "    }", "");
}

const out = [
  "// <auto-generated>",
  `// Generated by sdks/csharp/codegen/generate.mjs from sdks/openapi.json (${doc.info?.title ?? "api"} ${doc.info?.version ?? ""}).`,
  "// Do not edit: change the api, regenerate the document and this file (docs/sdks.md).",
  "// </auto-generated>",
  "",
  "using System.Collections.Generic;",
  "",
  "namespace Ledgerboard.Client.Models",
  "{",
];
for (const name of Object.keys(schemas).sort()) {
  const s = schemas[name];
  if (isEnum(s)) emitEnum(name, s, out);
  else if (isUnion(s)) emitUnion(name, s, out);
  else emitClass(name, s, out);
}
while (out[out.length - 1] === "") out.pop();
out.push("}", "");
writeFileSync(output, out.join("\n"));
