// Kubernetes quantities ("3600m", "32Gi", "1e3") as numbers, and written
// for reading. The module imports nothing, so that test/unit runs it alone.

// Quantity is a quantity as the API writes it.
export type Quantity = string;

// formatQuantity writes a quantity for reading: CPUs in cores, memory in
// binary units, counts as they are.
export function formatQuantity(name: string, quantity: Quantity): string {
  const value = parseQuantity(quantity);
  if (value === undefined) return quantity;
  if (name === "memory" || name === "ephemeral-storage") return bytes(value);
  return String(Math.round(value * 100) / 100);
}

const suffixes: Record<string, number> = {
  n: 1e-9, u: 1e-6, m: 1e-3, "": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};

// parseQuantity reads a Kubernetes quantity as a number, or undefined for
// one it cannot read.
export function parseQuantity(quantity: Quantity): number | undefined {
  const found = /^([+-]?[0-9.]+)(?:([eE][+-]?[0-9]+)|([a-zA-Z]*))$/.exec(quantity.trim());
  if (!found) return undefined;
  const [, number, exponent, suffix = ""] = found;
  const value = Number(number + (exponent ?? ""));
  const scale = exponent ? 1 : suffixes[suffix];
  return Number.isFinite(value) && scale !== undefined ? value * scale : undefined;
}

function bytes(value: number): string {
  const units = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
  let i = 0;
  while (Math.abs(value) >= 1024 && i < units.length - 1) {
    value /= 1024;
    i++;
  }
  return `${Math.round(value * 10) / 10}${units[i]}`;
}
