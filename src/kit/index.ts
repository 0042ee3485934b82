/**
 * `mesh-controller/kit`: the module author's kit (docs/modules.md). A module reads its env, dials
 * the bus verified against the mesh CA, and submits, pulls, emits, follows and answers tools with
 * the subjects and consumers the mesh granted it.
 */
export { connectModule, type ConnectModuleOptions, type Delivery, type MeshModule, type Stop } from "./module.ts";
export {
  ENV_FILE, ModuleEnvError, moduleSettings, parseEnvText, readModuleEnv,
  type EmitEntry, type FollowEntry, type ModuleSettings, type SubmitEntry, type ToolEntry, type WorkEntry,
} from "./env.ts";
