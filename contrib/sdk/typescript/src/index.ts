/**
 * @lodge/sdk: a client of lodged, for Node 20+ and browsers.
 *
 * ```ts
 * import { connect } from '@lodge/sdk'
 * const sandbox = await connect()
 * const result = await sandbox.exec({ command: 'echo hello' })
 * ```
 */
export { connect, Sandbox } from './sandbox.js';
export { ExecStream } from './exec-stream.js';
export { SessionAttach } from './attach.js';
export { Utf8Stream } from './output.js';
export * from './errors.js';
export type * from './types.js';
