export {
  writeFileDurable, appendFileDurable, renameDurable, moveEntriesDurable, linkDurable, removeFileDurable, makeFolderDurable, syncFolder,
  PRIVATE_FILE_MODE, PRIVATE_FOLDER_MODE, type DurableFs, type DurableWriteOptions,
} from "./durable.ts";
export { readBusCredential, writeBusCredential, CredentialFileError, type ReadCredentialOptions } from "./credentialFile.ts";
