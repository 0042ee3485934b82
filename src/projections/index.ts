export { initialState, evolve, startFold, appliedSequence, type Fold, type State, type SequencedCommit } from "./state.ts";
export { holdersOf, lastUserListSequence, credentialsDeliveredTo, provisionsDeliveredTo, CONTROLLER_PRINCIPAL, brokerNode, brokerReachableAt, busAddressesOf, parseBusAddress, formatBusAddress, DEFAULT_BUS_PORT } from "./queries.ts";
export { resolveSeat, seatOf, claimantsOf, moduleOf, everyModule, moduleNames, declaredSeat, seatNames, everySeat, aliasOf, everyAlias, type SeatRecord, type ModuleRecord, type ModulesState } from "./modules.ts";
export { credentialOf, credentialAt, everyCredential, credentialEntries, principalOfModule, type CredentialRecord } from "./credentials.ts";
export { nodesOfModule, modulesOnNode, assignedModules, handoversOf, type Handover } from "./assignments.ts";
export { whereEveryoneIs, overlayNameOf } from "./overlay.ts";
export { lastSent, type SentRecord } from "./sent.ts";
export { nodeOf, nodeNames, isEnrolled, everyNode, nodeCount, type NodeRecord, type NodesState } from "./nodes.ts";
export { provisionKey, provisionOf, everyProvision, provisionsInKeyOrder, type ProvisionRecord } from "./provisions.ts";
