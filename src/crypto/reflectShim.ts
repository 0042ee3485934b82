/**
 * The few Reflect metadata functions tsyringe (a dependency of @peculiar/x509) asks for when it is
 * loaded: `reflect-metadata` is not installed, and x509 only stores constructor parameter types,
 * which a WeakMap keeps as well. Installed only when absent; imported by ca.ts before x509.
 */
type Store = Map<unknown, unknown>;
const stores = new WeakMap<object, Store>();
const storeOf = (target: object): Store => {
  let store = stores.get(target);
  if (!store) stores.set(target, (store = new Map()));
  return store;
};
const ownMetadata = (key: unknown, target: object): unknown => stores.get(target)?.get(key);
const metadata = (key: unknown, target: object): unknown => {
  for (let at: object | null = target; at !== null; at = Object.getPrototypeOf(at) as object | null) {
    const value = ownMetadata(key, at);
    if (value !== undefined) return value;
  }
  return undefined;
};

const reflect = Reflect as unknown as Record<string, unknown>;
if (typeof reflect.getMetadata !== "function") {
  Object.assign(reflect, {
    defineMetadata: (key: unknown, value: unknown, target: object) => { storeOf(target).set(key, value); },
    getOwnMetadata: ownMetadata,
    getMetadata: metadata,
    hasMetadata: (key: unknown, target: object) => metadata(key, target) !== undefined,
    metadata: (key: unknown, value: unknown) => (target: object) => { storeOf(target).set(key, value); },
  });
}

export {};
