import { connect } from '@lodge/sdk'
const sandbox = await connect()

const result = await sandbox.exec({ command: 'echo hello' })
console.log(result.stdout)  // "hello\n"
console.log(result.exitCode)

// With working directory and environment variables
const result2 = await sandbox.exec({
  command: 'node index.js',
  workDir: '/workspace',
  env: { NODE_ENV: 'production' },
  timeoutSeconds: 30,
})
