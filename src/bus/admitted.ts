import { isClosedInHandshake } from "./errors.ts";

/** Tries of a dial the bus closed in its handshake (dialAdmitted), and the pause between them, ms. */
export const ADMIT_TRIES = 4;
export const ADMIT_PAUSE_MS = 250;

/**
 * `dial()`, made again when the bus closed it in its handshake (isClosedInHandshake), up to
 * ADMIT_TRIES times, ADMIT_PAUSE_MS apart: nats-server 2.9.10 closes the dials it has not admitted
 * yet whenever it reloads its users (every push that changes the list), so a dial beside a push was
 * now and then refused a valid key. A key the bus does not hold is refused at every try, and the
 * last refusal is thrown, 0.75 s later; any other failure at once. `onRetry` is told each try made
 * again (1-based). For a dial that presents one key: one that switches keys after a refusal (R50)
 * handles the refusal itself.
 */
export async function dialAdmitted<T>(dial: () => Promise<T>, onRetry: (attempt: number) => void = () => undefined): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await dial();
    } catch (error) {
      if (attempt >= ADMIT_TRIES || !isClosedInHandshake(error)) throw error;
      onRetry(attempt);
      await new Promise((done) => setTimeout(done, ADMIT_PAUSE_MS));
    }
  }
}
