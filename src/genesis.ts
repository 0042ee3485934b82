import { CONTROLLER_NAME, busUser } from "./names.ts";

/**
 * What genesis fixes for every mesh, read by the controller (push rotates the bootstrap password
 * away, R14) and by the installer (it carries the first user list, R13): domain constants live
 * here, and the installer imports them, not the other way.
 */

/**
 * The well-known bootstrap password of the controller's account (R13). It is public on purpose:
 * it only works until the controller's first composition, which rotates it away (R14), and the
 * bus listens on the genesis host alone until then.
 */
export const BOOTSTRAP_PASSWORD = "mesh-bootstrap-password";

/** The controller's bus user at genesis. */
export const BOOTSTRAP_USER = busUser("controller", CONTROLLER_NAME);
