/**
 * A node:test reporter for scripts/each-test-alone.ts: one JSON line per finished test or suite
 * (`{event, name, nesting, suite, skip}`), so the script can list titles and see which ran.
 */
export default async function* reporter(source) {
  for await (const event of source) {
    if (event.type === "test:pass" || event.type === "test:fail") {
      const { name, nesting, skip, details } = event.data;
      yield `${JSON.stringify({ event: event.type, name, nesting, suite: details?.type === "suite", skip: skip ?? false })}\n`;
    }
  }
}
