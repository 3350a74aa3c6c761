// Generates src/generated/schemas.ts, one TypeScript type per component schema of the
// daemon's OpenAPI document (docs/openapi.json of the statewatch sources), so that the
// client's request and answer types cannot drift from the daemon's contract: src/types.ts
// names the client's types after these. The output is committed (the package builds from
// its own directory alone); `npm run generate` rewrites it, and `npm test` first runs this
// with --check, which fails while it differs from what the document gives.
//
// It knows the subset of JSON Schema 2020-12 that the document uses: $ref into
// components/schemas, type (one or a list), properties, required, additionalProperties,
// items, enum, const, oneOf/anyOf, and allOf as a whole component schema ($refs then one
// object: an interface that extends them). A keyword it does not know makes it fail, naming the schema,
// rather than guess a type.
//
// Usage: node scripts/generate-types.mjs [--check] [OPENAPI_JSON [OUT_TS]]
//   defaults: ../../docs/openapi.json and src/generated/schemas.ts, relative to the package.
//   OUT_TS is rewritten only when its text changes; --check writes nothing.
import { mkdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const check = args[0] === "--check";
if (check) args.shift();
const docPath = resolve(args[0] ?? join(packageDir, "../../docs/openapi.json"));
const outPath = resolve(args[1] ?? join(packageDir, "src/generated/schemas.ts"));

// Keywords that only constrain values or document them: they add nothing to a TS type.
const IGNORED = new Set([
  "description", "examples", "minimum", "maximum", "minLength", "maxLength", "pattern",
  "title", "default", "format",
]);
const KNOWN = new Set([
  ...IGNORED, "$ref", "type", "properties", "required", "additionalProperties", "items",
  "enum", "const", "oneOf", "anyOf", "allOf",
]);
const REF_PREFIX = "#/components/schemas/";

class SchemaError extends Error {}

function literal(value) {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  throw new SchemaError(`a non-scalar enum or const value ${JSON.stringify(value)}`);
}

function union(types) {
  const unique = [...new Set(types)];
  return unique.join(" | ");  // a member that is itself a union needs no parentheses
}

function comment(text, indent) {
  if (!text) return "";
  const body = String(text).replaceAll("*/", "*\\/");
  return `${indent}/** ${body} */\n`;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

// The TS type of `schema`; `path` names it in errors; `depth` indents inline objects.
function typeOf(schema, path, depth) {
  if (schema === true || (schema && typeof schema === "object" && Object.keys(schema).every((k) => IGNORED.has(k)))) {
    return "unknown";
  }
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) {
    throw new SchemaError(`${path}: not a schema object`);
  }
  for (const key of Object.keys(schema)) {
    if (!KNOWN.has(key)) throw new SchemaError(`${path}: keyword ${key} is not supported`);
  }
  if (schema.$ref !== undefined) {
    if (!schema.$ref.startsWith(REF_PREFIX)) throw new SchemaError(`${path}: $ref ${schema.$ref} is not a component schema`);
    return schema.$ref.slice(REF_PREFIX.length);
  }
  if (schema.const !== undefined) return literal(schema.const);
  if (schema.enum !== undefined) return union(schema.enum.map(literal));
  if (schema.allOf !== undefined) throw new SchemaError(`${path}: allOf is supported only as a whole component schema`);
  const alternatives = schema.oneOf ?? schema.anyOf;
  if (alternatives !== undefined) {
    return union(alternatives.map((s, i) => typeOf(s, `${path}/oneOf/${i}`, depth)));
  }
  const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type];
  if (types.length === 0) {
    if (schema.properties !== undefined) return objectType(schema, path, depth);
    throw new SchemaError(`${path}: no type`);
  }
  return union(types.map((t) => {
    switch (t) {
      case "string": return "string";
      case "integer":
      case "number": return "number";
      case "boolean": return "boolean";
      case "null": return "null";
      case "array": {
        if (schema.items === undefined) throw new SchemaError(`${path}: an array without items`);
        const item = typeOf(schema.items, `${path}/items`, depth);
        return /^[A-Za-z0-9_$"]+$/.test(item) ? `${item}[]` : `Array<${item}>`;
      }
      case "object": return objectType(schema, path, depth);
      default: throw new SchemaError(`${path}: type ${t} is not supported`);
    }
  }));
}

// The members of an object schema, one a line at `depth`.
function members(schema, path, depth) {
  const indent = "  ".repeat(depth);
  const required = new Set(schema.required ?? []);
  const properties = schema.properties ?? {};
  let out = "";
  for (const name of required) {
    if (!(name in properties)) throw new SchemaError(`${path}: required property ${name} is not defined`);
  }
  for (const [name, property] of Object.entries(properties)) {
    const key = IDENTIFIER.test(name) ? name : JSON.stringify(name);
    out += comment(property?.description, indent);
    out += `${indent}${key}${required.has(name) ? "" : "?"}: ${typeOf(property, `${path}/properties/${name}`, depth + 1)};\n`;
  }
  const extra = schema.additionalProperties;
  if (extra !== undefined && extra !== false) {
    out += `${indent}[key: string]: ${extra === true ? "unknown" : typeOf(extra, `${path}/additionalProperties`, depth + 1)};\n`;
  }
  return out;
}

function objectType(schema, path, depth) {
  if (schema.properties === undefined) {
    const extra = schema.additionalProperties;
    if (extra === false) return "Record<string, never>";
    const value = extra === undefined || extra === true ? "unknown" : typeOf(extra, `${path}/additionalProperties`, depth);
    return `Record<string, ${value}>`;
  }
  return `{\n${members(schema, path, depth)}${"  ".repeat(depth - 1)}}`;
}

// allOf [{$ref: Base}, …, {type: object, properties}]: an interface that extends its bases
// and declares the last part's members. Any other allOf fails, naming the schema.
function extendingInterface(name, parts, path) {
  const own = parts.at(-1);
  const bases = parts.slice(0, -1);
  if (bases.length === 0 || !bases.every((s) => s?.$ref !== undefined && Object.keys(s).length === 1) ||
      own?.type !== "object" || own.properties === undefined) {
    throw new SchemaError(`${path}: allOf must be $refs then one object with properties`);
  }
  const names = bases.map((s, i) => typeOf(s, `${path}/allOf/${i}`, 1));
  const body = members(own, `${path}/allOf/${parts.length - 1}`, 1);
  return `export interface ${name} extends ${names.join(", ")} {\n${body}}\n`;
}

function generate(doc) {
  const schemas = doc?.components?.schemas;
  if (!schemas || typeof schemas !== "object") throw new SchemaError("the document has no components/schemas");
  let out =
    "// Generated by scripts/generate-types.mjs from the daemon's OpenAPI document\n" +
    "// (docs/openapi.json): do not edit; `npm run generate` writes it again and `npm test` fails\n" +
    "// while it is stale. One type per component schema; answers may carry fields added later.\n";
  for (const [name, schema] of Object.entries(schemas)) {
    const path = `${REF_PREFIX}${name}`;
    out += "\n" + comment(schema.description, "");
    const isInterface = schema.properties !== undefined && (schema.type === "object" || schema.type === undefined) &&
      schema.oneOf === undefined && schema.anyOf === undefined;
    if (isInterface) {
      out += `export interface ${name} {\n${members(schema, path, 1)}}\n`;
    } else if (schema.allOf !== undefined) {
      out += extendingInterface(name, schema.allOf, path);
    } else {
      out += `export type ${name} = ${typeOf(schema, path, 1)};\n`;
    }
  }
  return out;
}

let text;
try {
  text = generate(JSON.parse(readFileSync(docPath, "utf8")));
} catch (e) {
  const why = e instanceof SchemaError || e instanceof SyntaxError || e.code === "ENOENT" ? e.message : e.stack;
  console.error(`generate-types: ${relative(process.cwd(), docPath)}: ${why}`);
  process.exit(1);
}
const current = existsSync(outPath) ? readFileSync(outPath, "utf8") : null;
if (check) {
  if (current !== text) {
    console.error(`generate-types: ${relative(process.cwd(), outPath)} does not match ` +
      `${relative(process.cwd(), docPath)}: run npm run generate (in clients/typescript) and commit it`);
    process.exit(1);
  }
} else if (current !== text) {
  mkdirSync(dirname(outPath), { recursive: true });
  writeFileSync(outPath, text);
}
