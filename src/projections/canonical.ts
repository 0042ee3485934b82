/**
 * Canonical JSON: object keys sorted by UTF-16 code units (integer-like keys too, unlike
 * JSON.stringify's own order), no whitespace, arrays in order. Members JSON cannot hold
 * (undefined, functions, symbols) are dropped from objects and written `null` in arrays, as
 * JSON.stringify does. Two equal plain values give the same string, byte for byte (R41 compares
 * states this way). Pure. Throws a TypeError for a cycle or a bigint.
 */
export function canonicalJson(value: unknown): string {
  return write(value, new Set()) ?? "null";
}

function write(value: unknown, seen: Set<object>): string | undefined {
  if (value === null) return "null";
  switch (typeof value) {
    case "string":
    case "number":
    case "boolean":
      return JSON.stringify(value);
    case "bigint":
      throw new TypeError("canonicalJson: a bigint has no JSON form");
    case "object":
      break;
    case "undefined":
    case "function":
    case "symbol":
      return undefined;
  }
  const object = value as object;
  const toJSON = (object as { toJSON?: () => unknown }).toJSON;
  if (typeof toJSON === "function") return write(toJSON.call(object), seen);
  if (seen.has(object)) throw new TypeError("canonicalJson: the value has a cycle");
  seen.add(object);
  let text: string;
  if (Array.isArray(object)) {
    text = `[${object.map((item) => write(item, seen) ?? "null").join(",")}]`;
  } else {
    const members: string[] = [];
    for (const key of Object.keys(object).sort()) {
      const member = write((object as Record<string, unknown>)[key], seen);
      if (member !== undefined) members.push(`${JSON.stringify(key)}:${member}`);
    }
    text = `{${members.join(",")}}`;
  }
  seen.delete(object);
  return text;
}
