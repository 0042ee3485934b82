export { startHost, type Host, type HostOptions } from "./agent.ts";
export { applyDeclaration, desiredFiles, readOwned, DeclarationRefused, OWNED_FILE, type Applied, type Owned } from "./apply.ts";
export {
  installUserList, validateConfig, configLoadTime, lastGoodFile, UserListRefused,
  type BusReloadOptions, type UserListInstalled,
} from "./busList.ts";
export {
  initHostKeys, readNodePrivateKey, readNodeSeeds, rotateNodeKey, promotePendingSeed, credentialFrom, readCredentialFile,
  saveNodeCredential, HostStateError, NODE_KEY_FILE, NODE_PUBLIC_KEY_FILE, NODE_SEED_FILE, NODE_NKEY_FILE, NODE_PENDING_SEED_FILE,
  NODE_CREDENTIAL_FILE, type EnrolReply, type NodeSeeds,
} from "./keys.ts";
export {
  UserListParts, sha256Bytes, USER_LIST_PARTS_FOLDER, MAX_LISTS_KEPT, type Assembled,
} from "./userListParts.ts";
