/** Makes a switch over event types exhaustive: adding an event type fails the type-check here. */
export function assertNever(value: never): never {
  throw new Error(`unhandled event type: ${JSON.stringify(value)}`);
}
