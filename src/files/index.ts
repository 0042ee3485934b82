export {
  writeFileDurable, appendFileDurable, renameDurable, moveEntriesDurable, linkDurable, removeFileDurable, makeFolderDurable, syncFolder,
  PRIVATE_FILE_MODE, PRIVATE_FOLDER_MODE, type DurableFs, type DurableWriteOptions,
} from "./durable.ts";
export { readBusCredential, writeBusCredential, CredentialFileError, type ReadCredentialOptions } from "./credentialFile.ts";
export {
  stageTree, finishInterrupted, UnsafeTreePath, JOURNAL_FILE, STAGING_PREFIX, type StagedTree, type TreeFile,
} from "./stagedTree.ts";
export { packageLayout, packageFile, packageVersion, entryArguments, type PackageLayout } from "./packageFiles.ts";
export { envFileText, parseEnvFile, EnvFileError } from "./envFile.ts";
