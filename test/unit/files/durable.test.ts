import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  writeFileDurable, appendFileDurable, removeFileDurable, renameDurable, linkDurable, makeFolderDurable, readBusCredential, writeBusCredential,
  CredentialFileError, type DurableFs,
} from "../../../src/files/index.ts";

/**
 * R54: files that must survive a power cut are written to a temporary file (mode set at creation),
 * fsynced, renamed, and their folder fsynced. The module takes an fs adapter: a spy records the
 * calls (and the temporary file's mode and size when the first byte is written), and a failing
 * rename stands for a crash between the write and the rename.
 */

type Call = { call: string; path?: string; fd?: number; mode?: number; flags?: string };

/** node:fs with every call the module makes recorded; `fail` makes the named call throw. */
function spyFs(fail?: { call: keyof DurableFs; error?: NodeJS.ErrnoException }): DurableFs & { calls: Call[]; fdPaths: Map<number, string>; firstWrite?: { mode: number; size: number } } {
  const calls: Call[] = [];
  const fdPaths = new Map<number, string>();
  const maybeFail = (call: keyof DurableFs) => {
    if (fail?.call === call) throw fail.error ?? Object.assign(new Error(`${call} failed (simulated)`), { code: "EIO" });
  };
  const spy: DurableFs & { calls: Call[]; fdPaths: Map<number, string>; firstWrite?: { mode: number; size: number } } = {
    calls,
    fdPaths,
    openSync: ((path: fs.PathLike, flags?: fs.OpenMode, mode?: fs.Mode) => {
      maybeFail("openSync");
      const fd = fs.openSync(path, flags!, mode);
      fdPaths.set(fd, String(path));
      calls.push({ call: "open", path: String(path), fd, flags: String(flags), ...(mode === undefined ? {} : { mode: Number(mode) }) });
      return fd;
    }) as DurableFs["openSync"],
    writeSync: ((fd: number, buffer: Uint8Array, offset?: number, length?: number) => {
      maybeFail("writeSync");
      if (spy.firstWrite === undefined) {
        const stat = fs.fstatSync(fd);
        spy.firstWrite = { mode: stat.mode & 0o777, size: stat.size };
      }
      calls.push({ call: "write", fd });
      return fs.writeSync(fd, buffer, offset, length);
    }) as DurableFs["writeSync"],
    fsyncSync: (fd) => { maybeFail("fsyncSync"); calls.push({ call: "fsync", fd, path: fdPaths.get(fd)! }); fs.fsyncSync(fd); },
    fchmodSync: (fd, mode) => { maybeFail("fchmodSync"); calls.push({ call: "fchmod", fd, mode: Number(mode) }); fs.fchmodSync(fd, mode); },
    closeSync: (fd) => { calls.push({ call: "close", fd }); fs.closeSync(fd); },
    renameSync: (from, to) => { maybeFail("renameSync"); calls.push({ call: "rename", path: `${String(from)} -> ${String(to)}` }); fs.renameSync(from, to); },
    unlinkSync: (path) => { maybeFail("unlinkSync"); calls.push({ call: "unlink", path: String(path) }); fs.unlinkSync(path); },
    mkdirSync: ((path: fs.PathLike, options?: fs.MakeDirectoryOptions) => { calls.push({ call: "mkdir", path: String(path) }); return fs.mkdirSync(path, options); }) as DurableFs["mkdirSync"],
    existsSync: (path) => fs.existsSync(path),
    linkSync: (existing, name) => { maybeFail("linkSync"); calls.push({ call: "link", path: `${String(existing)} -> ${String(name)}` }); fs.linkSync(existing, name); },
  };
  return spy;
}

const credential = { address: "tls://bus.example:4222", user: "operator-admin", password: "s3cret-password-value", fingerprint: Array(32).fill("AB").join(":") };

describe("R54: durable files", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "durable-")); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("R54: writes through a temporary file in the same folder: open (exclusive, final mode), write, fsync, close, rename, fsync the folder", () => {
    const target = join(dir, "steps.json");
    const spy = spyFs();
    writeFileDurable(target, "hello\n", { mode: 0o600, fs: spy });
    assert.equal(readFileSync(target, "utf8"), "hello\n");
    const steps = spy.calls.map((c) => c.call);
    assert.deepEqual(steps.filter((s) => s !== "write"), ["open", "fchmod", "fsync", "close", "rename", "open", "fsync", "close"]);
    assert.ok(steps.indexOf("write") > steps.indexOf("open") && steps.lastIndexOf("write") < steps.indexOf("fsync"), "written before the file's fsync");
    const [openFile, , fsyncFile, , rename, openDir, fsyncDir] = spy.calls.filter((c) => c.call !== "write");
    assert.equal(openFile!.flags, "wx", "the temporary file is created exclusively");
    assert.equal(openFile!.mode, 0o600, "with its final mode");
    assert.equal(join(openFile!.path!, ".."), dir, "in the target's own folder");
    assert.equal(fsyncFile!.fd, openFile!.fd, "the file is fsynced");
    assert.equal(rename!.path, `${openFile!.path} -> ${target}`);
    assert.equal(openDir!.path, dir);
    assert.equal(fsyncDir!.fd, openDir!.fd, "then its folder");
  });

  it("R54: an append to a file that exists is written at its end and the file fsynced before it returns; a first append creates the file as writeFileDurable does", () => {
    const target = join(dir, "log.jsonl");
    const first = spyFs();
    appendFileDurable(target, "one\n", { mode: 0o600, fs: first });
    assert.deepEqual(first.calls.map((c) => c.call).filter((s) => s !== "write"), ["open", "fchmod", "fsync", "close", "rename", "open", "fsync", "close"], "created through a temporary file, its folder fsynced");
    const spy = spyFs();
    appendFileDurable(target, "two\n", { fs: spy });
    assert.equal(readFileSync(target, "utf8"), "one\ntwo\n", "appended, nothing before it rewritten");
    assert.deepEqual(spy.calls.map((c) => c.call), ["open", "write", "fsync", "close"]);
    assert.equal(spy.calls[0]!.flags, "a", "opened for appending, never truncated");
    assert.equal(spy.calls[2]!.fd, spy.calls[0]!.fd, "the file itself is fsynced");
    assert.equal(statSync(target).mode & 0o777, 0o600, "the mode given at creation stays");
  });

  it("R54: a failed fsync of an append is the caller's error: the append is not reported done", () => {
    const target = join(dir, "failing-log.jsonl");
    writeFileSync(target, "one\n");
    assert.throws(() => appendFileDurable(target, "two\n", { fs: spyFs({ call: "fsyncSync" }) }), /fsyncSync failed/);
  });

  it("R54: a secret is 0600 from its creation, before a byte is in it, whatever the umask", () => {
    const before = process.umask(0o000);
    try {
      const spy = spyFs();
      writeFileDurable(join(dir, "secret.json"), "password\n", { fs: spy });
      assert.deepEqual(spy.firstWrite, { mode: 0o600, size: 0 });
      assert.equal(statSync(join(dir, "secret.json")).mode & 0o777, 0o600);
    } finally {
      process.umask(before);
    }
  });

  it("R54: the given mode is the file's exactly, also when it replaces a file of another mode", () => {
    const target = join(dir, "public.pem");
    writeFileSync(target, "old", { mode: 0o600 });
    const before = process.umask(0o077);
    try {
      writeFileDurable(target, "new", { mode: 0o644 });
    } finally {
      process.umask(before);
    }
    assert.equal(statSync(target).mode & 0o777, 0o644);
    assert.equal(readFileSync(target, "utf8"), "new");
  });

  it("R54: a crash between the write and the rename (the rename fails) leaves the old file whole and no temporary file", () => {
    const sub = mkdtempSync(join(dir, "crash-"));
    const target = join(sub, "users.conf");
    writeFileSync(target, "the old list, whole\n", { mode: 0o600 });
    const spy = spyFs({ call: "renameSync" });
    assert.throws(() => writeFileDurable(target, "the new list\n", { fs: spy }), { code: "EIO" });
    assert.equal(readFileSync(target, "utf8"), "the old list, whole\n");
    assert.deepEqual(readdirSync(sub), ["users.conf"]);
    assert.ok(spy.calls.some((c) => c.call === "fsync"), "the temporary file was written and fsynced before the rename failed");
  });

  for (const failing of ["writeSync", "fsyncSync", "fchmodSync"] as const) {
    it(`R54: a failed ${failing} leaves the old file whole and no temporary file`, () => {
      const sub = mkdtempSync(join(dir, `fail-${failing}-`));
      const target = join(sub, "owned.json");
      writeFileSync(target, "old");
      assert.throws(() => writeFileDurable(target, "new", { fs: spyFs({ call: failing }) }), { code: "EIO" });
      assert.equal(readFileSync(target, "utf8"), "old");
      assert.deepEqual(readdirSync(sub), ["owned.json"]);
    });
  }

  it("R54: a missing folder is an error, with nothing written", () => {
    assert.throws(() => writeFileDurable(join(dir, "no-such-folder", "f"), "x"), { code: "ENOENT" });
  });

  it("R54: two writes of one file never share a temporary name", () => {
    const spy = spyFs();
    writeFileDurable(join(dir, "twice"), "1", { fs: spy });
    writeFileDurable(join(dir, "twice"), "2", { fs: spy });
    const temps = spy.calls.filter((c) => c.call === "open" && c.flags === "wx").map((c) => c.path);
    assert.equal(new Set(temps).size, 2);
    assert.equal(readFileSync(join(dir, "twice"), "utf8"), "2");
  });

  it("R54: removing a file fsyncs its folder; removing a missing one is no error", () => {
    const target = join(dir, "gone");
    writeFileSync(target, "x");
    const spy = spyFs();
    assert.equal(removeFileDurable(target, spy), true);
    assert.equal(fs.existsSync(target), false);
    assert.deepEqual(spy.calls.map((c) => c.call), ["unlink", "open", "fsync", "close"]);
    assert.equal(spy.calls[1]!.path, dir);
    assert.equal(removeFileDurable(target, spy), false);
  });

  it("R54: a rename fsyncs the folder it lands in", () => {
    writeFileSync(join(dir, "from"), "x");
    const spy = spyFs();
    renameDurable(join(dir, "from"), join(dir, "to"), spy);
    assert.deepEqual(spy.calls.map((c) => c.call), ["rename", "open", "fsync", "close"]);
    assert.equal(spy.calls[1]!.path, dir);
  });

  it("R54: a second name is a hard link made beside it, renamed over it, its folder fsynced; the two names share one file until either is written again", () => {
    const sub = mkdtempSync(join(dir, "link-"));
    const list = join(sub, "users.conf");
    const kept = join(sub, "users.conf.last-good");
    writeFileDurable(list, "the list\n");
    writeFileSync(kept, "an older list\n");
    const spy = spyFs();
    linkDurable(list, kept, spy);
    assert.deepEqual(spy.calls.map((c) => c.call), ["link", "rename", "open", "fsync", "close"]);
    const temporary = spy.calls[0]!.path!.split(" -> ")[1]!;
    assert.equal(join(temporary, ".."), sub, "the link is made in the target's own folder");
    assert.equal(spy.calls[1]!.path, `${temporary} -> ${kept}`);
    assert.equal(spy.calls[2]!.path, sub);
    assert.equal(statSync(kept).ino, statSync(list).ino, "one file, two names: no byte copied");
    writeFileDurable(list, "the next list\n");
    assert.equal(readFileSync(kept, "utf8"), "the list\n", "writing one name again leaves the other's file alone");
    assert.deepEqual(readdirSync(sub).sort(), ["users.conf", "users.conf.last-good"]);
  });

  it("R54: a link that cannot be made (no hard links here) or renamed leaves the target untouched and no temporary name", () => {
    const sub = mkdtempSync(join(dir, "link-fail-"));
    const list = join(sub, "users.conf");
    const kept = join(sub, "users.conf.last-good");
    writeFileSync(list, "the list\n");
    writeFileSync(kept, "the kept list\n");
    assert.throws(() => linkDurable(list, kept, spyFs({ call: "linkSync", error: Object.assign(new Error("not supported"), { code: "EPERM" }) })), { code: "EPERM" });
    assert.throws(() => linkDurable(list, kept, spyFs({ call: "renameSync" })), { code: "EIO" });
    assert.equal(readFileSync(kept, "utf8"), "the kept list\n");
    assert.deepEqual(readdirSync(sub).sort(), ["users.conf", "users.conf.last-good"]);
  });

  it("R54: a new folder is made 0700 and the folder above each new one fsynced", () => {
    const spy = spyFs();
    const deep = join(dir, "a", "b");
    makeFolderDurable(deep, undefined, spy);
    assert.equal(statSync(deep).mode & 0o777, 0o700);
    assert.deepEqual(spy.calls.filter((c) => c.call === "open").map((c) => c.path), [join(dir, "a"), dir]);
    const again = spyFs();
    makeFolderDurable(deep, undefined, again);
    assert.deepEqual(again.calls, [], "an existing folder is left alone");
  });
});

describe("R54 R3: the credential file", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "credential-file-")); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("R54: a credential is written 0600 from creation, durably, and read back as written", () => {
    const file = join(dir, "operator.json");
    const spy = spyFs();
    writeBusCredential(file, credential, spy);
    assert.equal(spy.firstWrite?.mode, 0o600);
    assert.ok(spy.calls.some((c) => c.call === "fsync" && c.path === dir), "its folder is fsynced");
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(readBusCredential(file), credential);
    assert.deepEqual(JSON.parse(readFileSync(file, "utf8")), credential);
  });

  it("R54: a credential of the wrong shape is refused naming the field, and the file in place is untouched", () => {
    const file = join(dir, "kept.json");
    writeBusCredential(file, credential);
    assert.throws(
      () => writeBusCredential(file, { ...credential, address: "tls://user:pw@bus.example:4222" }),
      (error: unknown) => error instanceof CredentialFileError && error.code === "invalid" && error.field === "address",
    );
    assert.deepEqual(readBusCredential(file), credential);
  });

  it("R3: reading names what is wrong (missing, not JSON, a bad or unknown field) and never the password", () => {
    const cases: Array<[string, string | null, CredentialFileError["code"], string | undefined]> = [
      ["missing.json", null, "unreadable", undefined],
      ["text.json", `password=${credential.password}`, "not-json", undefined],
      ["no-user.json", JSON.stringify({ ...credential, user: "" }), "invalid", "user"],
      ["extra.json", JSON.stringify({ ...credential, token: "x" }), "invalid", "token"],
      ["bad-address.json", JSON.stringify({ ...credential, address: `nats://admin:${credential.password}@h:4222` }), "invalid", "address"],
    ];
    for (const [name, text, code, field] of cases) {
      const file = join(dir, name);
      if (text !== null) writeFileSync(file, text);
      assert.throws(() => readBusCredential(file), (error: unknown) => {
        assert.ok(error instanceof CredentialFileError, name);
        assert.equal(error.code, code, name);
        assert.equal(error.field, field, name);
        assert.equal(error.path, file);
        assert.ok(!error.message.includes(credential.password), `${name}: the message holds no password`);
        return true;
      });
    }
  });

  it("R54: a file holding another form is opened by the caller's `open` before the shape is checked", () => {
    const file = join(dir, "wrapped.json");
    writeFileSync(file, JSON.stringify({ reply: credential }));
    assert.deepEqual(readBusCredential(file, { open: (json) => (json as { reply: unknown }).reply }), credential);
  });
});

describe("R54: one writer", () => {
  const root = join(import.meta.dirname, "../../..");
  const files = (folder: string): string[] =>
    readdirSync(join(root, folder), { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts")).map((f) => join(folder, f));

  it("R54: no file outside src/files writes, renames, copies or chmods a file by hand", () => {
    const handRolled = /\b(writeFileSync|writeFile|appendFileSync|renameSync|rename|copyFileSync|copyFile|chmodSync|chmod|unlinkSync|linkSync)\b/;
    const offenders = [...files("src"), ...files("installer")]
      .filter((file) => !file.startsWith(join("src", "files")))
      .flatMap((file) =>
        readFileSync(join(root, file), "utf8").split("\n").flatMap((line, i) => {
          const code = line.replace(/\/\/.*$/, "");
          return /^\s*(\*|\/\*)/.test(line) || !handRolled.test(code) || !/(from "node:fs|fs\.|Sync\(|\w\()/.test(code) ? [] : [`${file}:${i + 1}: ${line.trim()}`];
        }));
    assert.deepEqual(offenders, [], "use writeFileDurable / writeBusCredential / renameDurable / linkDurable / removeFileDurable (src/files)");
  });

  it("R54: credential files are read by the one reader (readBusCredential), not parsed by hand", () => {
    // host/keys.ts credentialFrom checks a value that came over the bus (an enrol or rotate reply)
    // and is the `open` step readBusCredential runs for a node's file: the one other parser.
    const parsers = [...files("src"), ...files("installer")]
      .filter((file) => !file.startsWith(join("src", "files")) && file !== join("src", "host", "keys.ts"))
      .filter((file) => /BusCredential\.(safeParse|parse)\(/.test(readFileSync(join(root, file), "utf8")));
    assert.deepEqual(parsers, []);
  });
});
