import type { BodyOf, CredentialView } from "../contracts/verbs.ts";
import { everyCredential, type State } from "../projections/index.ts";
import { query } from "./envelope.ts";

/** Each credential, sorted by user; fields picked one by one so a secret cannot slip through. */
export function answer(state: State): BodyOf<"credentials"> {
  return {
    credentials: everyCredential(state.credentials)
      .map((c) => ({ principal: { kind: c.principal.kind, name: c.principal.name }, user: c.user, address: c.address, mintedAt: c.mintedAt }))
      .sort((a, b) => a.user.localeCompare(b.user)),
  };
}

export const credentials = query("credentials", {
  answer,
  page: { field: "credentials", key: (item) => (item as CredentialView).user, compare: (a, b) => a.localeCompare(b) },
});
