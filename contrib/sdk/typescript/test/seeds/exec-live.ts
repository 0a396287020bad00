import { connect } from '@lodge/sdk'
const sandbox = await connect()

const handle = sandbox.execStream({
  command:   'npm install',
  workdir:   '/workspace',
  onStdout:  chunk => process.stdout.write(chunk),
  onStderr:  chunk => process.stderr.write(chunk),
})

const { code } = await handle.done
console.log(`exited with ${code}`)
