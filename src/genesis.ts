import { CONTROLLER_NAME, busUser } from "./names.ts";

/**
 * What genesis fixes for every mesh, read by the controller (push rotates the genesis key away,
 * R14) and by the installer (it carries the first user list, R13): domain constants live
 * here, and the installer imports them, not the other way.
 */

/**
 * The well-known genesis seed of the controller's account (R13, R63): an nkey user seed that is
 * public on purpose: it only works until the controller's first composition, which rotates it away
 * (R14), and the bus listens on the genesis host alone until then.
 */
export const BOOTSTRAP_SEED = "SUAHV7L4KQI7D7W4KSTKLBLD2SFIYSCTEKHJUKE2GQRT3WEZ7UG2LL2TO4";

/**
 * The public key of BOOTSTRAP_SEED: the controller's entry in the carried list (R13). Written out
 * so this module stays pure (no crypto); a unit test holds it to publicKeyOfSeed(BOOTSTRAP_SEED).
 */
export const BOOTSTRAP_NKEY = "UCNSLMYJ2GSYT6AIMVXFAI6K6CNSTZZ66GYIFZTUR5OLUJN5XLLXN2IU";

/**
 * The bootstrap password of a mesh installed before nkeys (R13): a controller whose records still
 * hold its hash is rotated off it, onto a seed, by the first push exactly as off BOOTSTRAP_SEED.
 */
export const BOOTSTRAP_PASSWORD = "mesh-bootstrap-password";

/** The controller's bus user at genesis. */
export const BOOTSTRAP_USER = busUser("controller", CONTROLLER_NAME);
