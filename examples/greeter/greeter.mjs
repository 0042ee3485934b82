#!/usr/bin/env node
// The example mesh's greeter (examples/greeter.json), written with mesh-controller/kit
// (docs/modules.md). Its node's agent starts it in the module's folder with its env: it answers
// the tool `greet`, takes `greet` work from the greetings queue and announces each greeting as the
// event `greeted`. Run by hand in a module's folder: `mesh-greeter` (it reads ./env).
import { connectModule } from "mesh-controller/kit";

/** The name a request or work item asks to greet: `{"name": "ada"}`, or a bare string. */
function nameOf(data) {
  if (typeof data === "string" && data !== "") return data;
  if (data !== null && typeof data === "object" && typeof data.name === "string" && data.name !== "") return data.name;
  return "world";
}

const mesh = await connectModule();
let greeted = 0;

mesh.answer("greet", (request) => ({ greeting: `hello, ${nameOf(request)}`, greeted }));

await mesh.work(async (item) => {
  const name = nameOf(item.data);
  // The event's message id follows the work item's: a redelivered item is announced once.
  await mesh.emit("greeted", { name, greeting: `hello, ${name}` }, item.id === undefined ? {} : { id: `greeted-${item.id}` });
  greeted += 1;
  console.log(`greeted ${name}`);
});

console.log(`greeter: answering greet and taking greet work as ${mesh.settings.user}`);
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.once(signal, () => {
    void mesh.close().finally(() => process.exit(0));
  });
}
