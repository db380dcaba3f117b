// The cluster page's quantities (src/quantity.ts) without a browser or a
// stack: node --test test/unit/. The module imports nothing; TypeScript's
// own compiler strips its types here.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import ts from "typescript";

const source = join(dirname(fileURLToPath(import.meta.url)), "../../src/quantity.ts");
const { outputText } = ts.transpileModule(readFileSync(source, "utf8"), {
  compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
});
const dir = mkdtempSync(join(tmpdir(), "dashboard-quantity-"));
writeFileSync(join(dir, "quantity.mjs"), outputText);
const quantity = await import(pathToFileURL(join(dir, "quantity.mjs")).href);
rmSync(dir, { recursive: true, force: true });

test("parseQuantity reads the API's suffixes, decimal and binary, and exponents", () => {
  assert.equal(quantity.parseQuantity("3600m"), 3.6);
  assert.equal(quantity.parseQuantity("8"), 8);
  assert.equal(quantity.parseQuantity("32Gi"), 32 * 2 ** 30);
  assert.equal(quantity.parseQuantity("4Ti"), 4 * 2 ** 40);
  assert.equal(quantity.parseQuantity("2G"), 2e9);
  assert.equal(quantity.parseQuantity("1e3"), 1000);
  assert.equal(quantity.parseQuantity("1E"), 1e18);
  for (const bad of ["", "Gi", "3Xi", "1..2.3z"]) assert.equal(quantity.parseQuantity(bad), undefined, bad);
});

test("formatQuantity writes cores, binary units for memory, and counts", () => {
  assert.equal(quantity.formatQuantity("cpu", "3600m"), "3.6");
  assert.equal(quantity.formatQuantity("cpu", "0"), "0");
  assert.equal(quantity.formatQuantity("memory", "5632Mi"), "5.5Gi");
  assert.equal(quantity.formatQuantity("memory", "4Ti"), "4Ti");
  assert.equal(quantity.formatQuantity("memory", "512"), "512");
  assert.equal(quantity.formatQuantity("nvidia.com/gpu", "64"), "64");
  // What it cannot read, it shows as the API wrote it.
  assert.equal(quantity.formatQuantity("memory", "lots"), "lots");
});
