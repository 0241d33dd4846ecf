// Sample function of the runtime conformance suite: one case per path (event._path).
// Its twins in ../../python3.11/handler and ../../go1.23/handler behave the same.
'use strict'
const { Console } = require('node:console')

if (process.env.SAMPLE_FAIL_LOAD) throw new Error('load failed on purpose')
const delay = Number(process.env.SAMPLE_LOAD_DELAY_MS || 0)
if (delay > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, delay) // a slow require
console.log('sample loaded')

// A logger made at load time, writing to stdout: its output must still be captured.
const logger = new Console({ stdout: process.stdout })
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

function explode () {
  throw new Error('kaboom')
}

const cases = {
  '/': () => ({ ok: true }),
  '/echo': (e) => e,
  '/size': (e) => ({ length: (e.body || '').length }),
  '/list': () => [1, 'two', null],
  '/number': () => 42,
  '/bool': () => true,
  '/null': () => null,
  '/html': () => '  <h1>hi</h1>',
  '/text': () => 'héllo ✓',
  '/status': () => ({ statusCode: 201, headers: { 'X-Custom': 'yes' }, body: { created: true } }),
  '/status-text': () => ({ statusCode: 404, body: 'not here' }),
  '/status-ctype': () => ({ statusCode: 200, headers: { 'Content-Type': 'text/csv' }, body: 'a,b\n' }),
  '/raise': () => { throw new TypeError('boom') },
  '/panic': () => explode(),
  '/log': async (e) => {
    const id = e._query.id
    console.log(`start ${id}`)
    await sleep(50) // let the other requests interleave
    logger.log(`middle ${id}`)
    console.error(`end ${id}`)
    return { id }
  },
  '/big-log': () => {
    for (let i = 0; i < 2000; i++) console.log('é'.repeat(30) + ` ${i}`)
    return 'printed'
  },
  '/sleep': () => sleep(30000)
}

exports.handle = async (event) => {
  const path = event._path || '/'
  if (path === '/job') {
    process.stdout.write('partial')
    return { event, done: true }
  }
  return cases[path](event)
}
