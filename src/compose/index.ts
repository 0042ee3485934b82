export { type ComposeConfig, type Direction, type Grant, type Permissions, type BusUser, type BusUsers, type LeftOut } from "./types.ts";
export { permissionsOf, grantsOf, moduleGrants, userOf, permissionsFromGrants, controllerReplyInboxes } from "./permissions.ts";
export { busNamesOfList, composeBusUsers, renderUserList } from "./userList.ts";
export {
  composeDeclaration, composeDeclarations, prepareComposition, utf8Length, userListPartCount, USER_LIST_PART_BYTES,
  type UserListRef, type Declaration, type DeclarationResult, type DeclaredModule, type DeclaredCredential, type ProvisionGrant,
  type ReceivedProvision, type Prepared,
} from "./declaration.ts";
export { composeTopology, type Topology, type StreamSpec, type ConsumerSpec } from "./topology.ts";
export { requiredProvisions, neededProvisions, type NeededProvision } from "./provisions.ts";
export { explain, credentialNote, type Explanation } from "./explain.ts";
export {
  moduleEnvironment, CERTIFICATE_FILE_VARIABLE, PASSWORD_VARIABLE, SEED_VARIABLE, type ModuleEnvironment, type WorkEntry, type SubmitEntry,
  type EmitEntry, type FollowEntry, type ToolEntry,
} from "./environment.ts";
export { covers } from "./subjects.ts";
export {
  overlapEnded, overlapNodes, openOverlaps, overlapsOfList, previousAdmitted, type ModuleRun, type OpenOverlap, type OverlapReport, type OverlapReports,
} from "./overlap.ts";
export { canonicalJson, type Digest } from "./digest.ts";
