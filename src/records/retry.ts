import { FencedAppend, FenceRetriesExhausted } from "./errors.ts";

/** How many times a fenced-out append is decided again before giving up (STYLE.md 7). */
export const FENCE_RETRIES = 5;

/**
 * The one bounded policy for fenced appends (R40): run `attempt`; when it throws FencedAppend,
 * run `catchUp` and attempt again, at most `retries` more times. Any other error passes through.
 * Throws FenceRetriesExhausted (cause: the last FencedAppend) when every attempt was fenced out.
 */
export async function retryFenced<T>(
  attempt: () => Promise<T>,
  catchUp: () => Promise<unknown>,
  retries: number = FENCE_RETRIES,
): Promise<T> {
  for (let tried = 0; ; tried += 1) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof FencedAppend)) throw error;
      if (tried >= retries) throw new FenceRetriesExhausted(tried + 1, { cause: error });
      await catchUp();
    }
  }
}
