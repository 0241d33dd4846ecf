'use strict'
// sless Node.js runtime wrapper: serves a user function over HTTP, or runs it once as a job.
//
// This file sits next to the folder function/ that holds the user's code (/app and
// /app/function in the image). The contract (environment, event, response, logs) is
// documented in runtimes/doc.go; this file and its Python and Go siblings implement the
// same behaviour and are tested by one conformance suite.
//
// Environment: PORT (8080), SLESS_HOST (all interfaces), SLESS_LISTEN_FD (an inherited,
// already-listening stream socket to serve on instead of binding SLESS_HOST:PORT),
// SLESS_ENTRYPOINT (module.function, required), SLESS_MODE (server | job | check | pool), SLESS_EVENT
// (job input, JSON object), SLESS_TIMEOUT_SEC (job time limit; exit 124 when it passes),
// SLESS_CONTROL_FD (pool mode: the socket its function comes on; runtimes/pool.go).

const fs = require('node:fs')
const http = require('node:http')
const path = require('node:path')
const { pathToFileURL } = require('node:url')
const { AsyncLocalStorage } = require('node:async_hooks')
const { isUtf8 } = require('node:buffer')

const HEALTH_PATH = '/_sless/health'
const LOG_HEADER = 'X-Sless-Log'
const LOG_CAP = 16 * 1024
const LOG_MARKER = Buffer.from('\n[sless: log truncated]\n')
const JSON_TYPE = 'application/json'
const HTML_TYPE = 'text/html; charset=utf-8'
const TEXT_TYPE = 'text/plain; charset=utf-8'
let FUNCTION_DIR = path.join(__dirname, 'function') // pool mode: the one it is given
// Headers the wrapper computes itself; a function's own values for them are dropped.
const RESERVED_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', LOG_HEADER.toLowerCase()])
const EMPTY = Buffer.alloc(0)

// The capture of the invocation whose async context is running, if any.
const captures = new AsyncLocalStorage()
let userFunction = null // once loaded; health answers 503 until then
let atLineStart = true // whether real stdout output ends a line (job mode)

// Capture is the output of one invocation, kept up to LOG_CAP bytes.
class Capture {
  constructor () {
    this.chunks = []
    this.size = 0
    this.over = false
    this.closed = false // set when the response is out; later output is the process's
  }

  add (chunk) {
    if (this.over) return
    const room = LOG_CAP - this.size
    if (chunk.length > room) {
      chunk = chunk.subarray(0, room)
      this.over = true
    }
    this.chunks.push(chunk)
    this.size += chunk.length
  }

  // header returns the X-Sless-Log value, or null when the invocation printed nothing.
  header () {
    let data = Buffer.from(Buffer.concat(this.chunks, this.size).toString('utf8')) // valid UTF-8
    if (this.over || data.length > LOG_CAP) {
      let cut = LOG_CAP - LOG_MARKER.length
      while (cut > 0 && (data[cut] & 0xc0) === 0x80) cut-- // never split a character
      data = Buffer.concat([data.subarray(0, cut), LOG_MARKER])
    }
    return data.length ? data.toString('base64') : null
  }
}

// captureStream makes stream.write go to the current invocation's capture, if any.
// console.* and loggers built on process.stdout/stderr all end in stream.write.
function captureStream (stream, trackLines) {
  const write = stream.write.bind(stream)
  stream.write = function (chunk, encoding, callback) {
    if (typeof encoding === 'function') {
      callback = encoding
      encoding = undefined
    }
    const capture = captures.getStore()
    if (capture && !capture.closed) {
      capture.add(typeof chunk === 'string' ? Buffer.from(chunk, encoding || 'utf8') : Buffer.from(chunk))
      if (callback) process.nextTick(callback)
      return true
    }
    if (trackLines && chunk.length) {
      const last = typeof chunk === 'string' ? chunk.charCodeAt(chunk.length - 1) : chunk[chunk.length - 1]
      atLineStart = last === 10
    }
    return write(chunk, encoding, callback)
  }
}

// load requires (or imports, for ES modules) the user's module and returns the function.
async function load (entrypoint) {
  const dot = entrypoint.lastIndexOf('.')
  if (dot <= 0 || dot === entrypoint.length - 1) {
    throw new Error(`SLESS_ENTRYPOINT must be module.function, got ${JSON.stringify(entrypoint)}`)
  }
  const moduleName = entrypoint.slice(0, dot)
  const name = entrypoint.slice(dot + 1)
  const file = path.resolve(FUNCTION_DIR, moduleName)
  let mod
  if (!fs.existsSync(file + '.js') && fs.existsSync(file + '.mjs')) {
    mod = await import(pathToFileURL(file + '.mjs').href)
  } else {
    try {
      require.resolve(file)
    } catch (err) {
      // The entrypoint's module itself (a module it requires fails in require below).
      if (err.code !== 'MODULE_NOT_FOUND') throw err
      const missing = new Error(`${moduleName}.js (or ${moduleName}.mjs) is not in the function's folder`)
      missing.code = 'SLESS_MODULE_MISSING'
      throw missing
    }
    try {
      mod = require(file)
    } catch (err) {
      if (err.code !== 'ERR_REQUIRE_ESM' && err.code !== 'ERR_REQUIRE_ASYNC_MODULE') throw err
      mod = await import(pathToFileURL(require.resolve(file)).href)
    }
  }
  const fn = mod?.[name] ?? mod?.default?.[name]
  if (typeof fn !== 'function') throw new Error(`module ${JSON.stringify(moduleName)} has no function ${JSON.stringify(name)}`)
  return fn
}

// failLoad reports a load failure on stderr, summary line first, and ends the process.
// A missing module is that line alone (the build's check reads it).
function failLoad (entrypoint, err) {
  if (err?.code === 'SLESS_MODULE_MISSING') {
    process.stderr.write(`sless: cannot load ${entrypoint}: ${err.message}\n`)
    process.exit(1)
  }
  const summary = err instanceof Error ? `${err.name}: ${err.message}` : String(err)
  process.stderr.write(`sless: cannot load ${entrypoint}: ${summary}\n${describe(err)}`)
  process.exit(1)
}

function describe (err) {
  return (err instanceof Error && err.stack ? err.stack : String(err)) + '\n'
}

// put sets a key even when it is "__proto__", which plain assignment would not.
function put (object, key, value) {
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true })
}

function firstNonSpace (buf) {
  for (const byte of buf) {
    if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d) return byte
  }
  return -1
}

// makeEvent builds the event of one request: a JSON object body, or {body: text}
// (a body that is not UTF-8: {body: base64, _body_base64: true}), plus _ keys.
function makeEvent (req, urlPath, query, raw) {
  let event = null
  if (firstNonSpace(raw) === 0x7b) { // '{'
    try {
      const parsed = JSON.parse(raw.toString('utf8'))
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) event = parsed
    } catch {}
  }
  if (event === null) {
    if (!raw.length) event = {}
    else if (isUtf8(raw)) event = { body: raw.toString('utf8') }
    else event = { body: raw.toString('base64'), _body_base64: true }
  }
  const headers = {}
  for (const [name, values] of Object.entries(req.headersDistinct)) put(headers, name, values.join(', '))
  const params = {}
  for (const [key, value] of new URLSearchParams(query)) {
    const seen = Object.hasOwn(params, key) ? params[key] : undefined
    put(params, key, seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value])
  }
  event._method = req.method
  event._path = urlPath
  event._query = params
  event._headers = headers
  event._accept = headers.accept ?? ''
  return event
}

// encode returns the content type and bytes of a plain return value.
function encode (value) {
  if (typeof value === 'string') return [/^\s*</.test(value) ? HTML_TYPE : TEXT_TYPE, Buffer.from(value, 'utf8')]
  return [JSON_TYPE, Buffer.from(JSON.stringify(value === undefined ? null : value) ?? 'null', 'utf8')]
}

// render turns a return value into [status, flat header list, body].
function render (result) {
  if (result === null || typeof result !== 'object' || Array.isArray(result) || !Object.hasOwn(result, 'statusCode')) {
    const [type, body] = encode(result)
    return [200, ['Content-Type', type], body]
  }
  const status = result.statusCode
  if (!Number.isInteger(status) || status < 100 || status > 599) {
    throw new RangeError(`statusCode must be an integer from 100 to 599, got ${JSON.stringify(status)}`)
  }
  const headers = []
  for (const [name, value] of Object.entries(result.headers ?? {})) {
    if (RESERVED_HEADERS.has(name.toLowerCase())) continue
    for (const item of Array.isArray(value) ? value : [value]) {
      http.validateHeaderName(name)
      http.validateHeaderValue(name, String(item))
      headers.push(name, String(item))
    }
  }
  if (result.body === undefined || result.body === null) return [status, headers, EMPTY]
  const [type, body] = encode(result.body)
  if (!headers.some((h, i) => i % 2 === 0 && h.toLowerCase() === 'content-type')) headers.push('Content-Type', type)
  return [status, headers, body]
}

function failure (err) {
  const isError = err instanceof Error
  const body = JSON.stringify({
    error: isError ? err.message : String(err),
    type: isError ? (err.constructor?.name || err.name) : typeof err
  })
  return [500, ['Content-Type', JSON_TYPE], Buffer.from(body, 'utf8')]
}

function send (res, status, headers, body) {
  res.writeHead(status, [...headers, 'Content-Length', String(body.length)])
  res.end(body)
}

// handle serves one request. It avoids async functions and extra promises: with an
// AsyncLocalStorage in use, every promise costs a hook call.
function handle (req, res) {
  const q = req.url.indexOf('?')
  const urlPath = q < 0 ? req.url : req.url.slice(0, q)
  const fn = userFunction
  if (urlPath === HEALTH_PATH || fn === null) {
    return send(res, fn ? 200 : 503, ['Content-Type', JSON_TYPE], Buffer.from(fn ? '{"status":"ok"}' : '{"status":"loading"}'))
  }
  const chunks = []
  req.on('data', (chunk) => chunks.push(chunk))
  req.on('error', () => res.destroy())
  req.on('end', () => {
    const capture = new Capture()
    const respond = (status, headers, body) => {
      capture.closed = true
      try {
        const log = capture.header()
        if (log) headers.push(LOG_HEADER, log)
        send(res, status, headers, body)
      } catch (err) { // a bug here must cost one request, not the process
        process.stderr.write(`sless: ${describe(err)}`)
        res.destroy()
      }
    }
    let event
    try {
      event = makeEvent(req, urlPath, q < 0 ? '' : req.url.slice(q + 1), Buffer.concat(chunks))
    } catch (err) {
      return respond(...failure(err))
    }
    captures.run(capture, () => invoke(fn, event, respond))
  })
}

// invoke calls fn, sync or async, and answers through done; it runs inside the
// request's capture, and so does the report of an error.
function invoke (fn, event, done) {
  const fail = (err) => {
    process.stderr.write(describe(err)) // into the capture: the caller never sees it
    done(...failure(err))
  }
  const succeed = (result) => {
    let response
    try {
      response = render(result)
    } catch (err) {
      return fail(err)
    }
    done(...response)
  }
  let result
  try {
    result = fn(event)
  } catch (err) {
    return fail(err)
  }
  if (result !== null && typeof result === 'object' && typeof result.then === 'function') result.then(succeed, fail)
  else succeed(result)
}

// serve listens first (health answers 503 while loading), then loads the function; given
// a server that listens already (pool mode) it loads at once.
function serve (entrypoint, server) {
  const loadFunction = () => {
    load(entrypoint).then((fn) => { userFunction = fn }, (err) => failLoad(entrypoint, err))
  }
  if (server) loadFunction()
  else server = listen(loadFunction)
  // SIGTERM (a pod or a process being stopped): take no new connections,
  // let the requests in flight finish, exit 0.
  process.removeAllListeners('SIGTERM')
  process.on('SIGTERM', () => {
    server.close(() => process.exit(0))
    server.closeIdleConnections()
  })
}

// listen makes the server and listens on the inherited socket SLESS_LISTEN_FD when that is
// set, else on SLESS_HOST:PORT; then calls onListening. Connections wait for the event loop.
function listen (onListening) {
  const fd = process.env.SLESS_LISTEN_FD
  if (fd && !/^[0-9]+$/.test(fd)) {
    process.stderr.write(`sless: SLESS_LISTEN_FD must be a file descriptor number, got ${JSON.stringify(fd)}\n`)
    process.exit(1)
  }
  const server = http.createServer(handle)
  server.keepAliveTimeout = 120 * 1000 // outlive the proxy's idle connections, not the reverse
  server.on('error', (err) => {
    process.stderr.write(`sless: cannot listen${fd ? ` on fd ${fd}` : ''}: ${err.message}\n`)
    process.exit(1)
  })
  if (fd) server.listen({ fd: Number(fd) }, onListening) // a TCP or a Unix socket, listening already
  else server.listen(Number(process.env.PORT || 8080), process.env.SLESS_HOST || undefined, onListening)
  return server
}

function parseEvent (text) {
  if (!text || !text.trim()) return {}
  const event = JSON.parse(text)
  if (event === null || typeof event !== 'object' || Array.isArray(event)) throw new Error('must be a JSON object')
  return event
}

// runJob calls the function once; its JSON result is the last line of stdout.
async function runJob (entrypoint) {
  const timeout = Number(process.env.SLESS_TIMEOUT_SEC || 0)
  if (timeout > 0) {
    setTimeout(() => {
      process.stderr.write(`sless: timed out after ${timeout} seconds\n`)
      process.exit(124)
    }, timeout * 1000)
  }
  // Without a timer nothing may keep the loop alive: a promise that never settles.
  process.on('beforeExit', () => {
    process.stderr.write('sless: the function returned a promise that never settled\n')
    process.exit(1)
  })
  let event
  try {
    event = parseEvent(process.env.SLESS_EVENT)
  } catch (err) {
    process.stderr.write(`sless: SLESS_EVENT: ${err.message}\n`)
    process.exit(1)
  }
  let fn
  try {
    fn = await load(entrypoint)
  } catch (err) {
    failLoad(entrypoint, err)
  }
  let out
  try {
    const result = await fn(event)
    out = JSON.stringify(result === undefined ? null : result) ?? 'null'
  } catch (err) {
    process.stderr.write(describe(err))
    process.exit(1)
  }
  if (!atLineStart) process.stdout.write('\n')
  process.stdout.write(out + '\n')
  process.exit(0) // open handles the function left (timers, sockets) must not hold the job
}

// check loads the entrypoint as the server and the job runner would, and exits:
// 0 when it resolves, 1 with the load error (the build's check).
async function check (entrypoint) {
  try {
    await load(entrypoint)
  } catch (err) {
    failLoad(entrypoint, err)
  }
  process.stdout.write(`sless: loaded ${entrypoint}\n`)
  process.exit(0)
}

// pool waits, warm, for the function it is to serve, then becomes its server: the pool
// mode (runtimes/pool.go). Nothing of the function is in this process before.
async function pool () {
  const fd = process.env.SLESS_CONTROL_FD
  if (!/^[0-9]+$/.test(fd || '')) fatal(`SLESS_CONTROL_FD must be a file descriptor number, got ${JSON.stringify(fd)}`)
  const ctl = Number(fd)
  await warmUp()
  // The server, made now, serves once this returns to the event loop: after the
  // function is loaded.
  const server = listen()
  fs.writeSync(ctl, 'ready\n')
  const line = readLine(ctl)
  fs.closeSync(ctl)
  if (line === null) process.exit(0) // the platform let it go
  const spec = JSON.parse(line)
  become(spec.uid, spec.gid)
  for (const name of Object.keys(process.env)) delete process.env[name]
  for (const kv of spec.env) {
    const eq = kv.indexOf('=')
    if (eq > 0) process.env[kv.slice(0, eq)] = kv.slice(eq + 1)
  }
  FUNCTION_DIR = spec.dir
  process.chdir(FUNCTION_DIR)
  serve(process.env.SLESS_ENTRYPOINT || '', server)
}

// warmUp answers one request of its own on a throwaway socket (an abstract Unix socket,
// which names no file), so that what Node.js loads only for a server's first request is
// loaded before the function comes.
function warmUp () {
  return new Promise((resolve) => {
    const name = `\0sless-warm-up-${process.pid}-${Math.random()}`
    const server = http.createServer(handle)
    const done = () => server.close(() => resolve())
    server.on('error', () => resolve())
    server.listen(name, () => {
      http.get({ socketPath: name, path: HEALTH_PATH }, (res) => res.resume().on('end', done)).on('error', done)
    })
  })
}

// readLine reads descriptor fd up to its first newline, blocking; null at end of file.
function readLine (fd) {
  const chunks = []
  const buf = Buffer.alloc(64 * 1024)
  for (;;) {
    let n
    try {
      n = fs.readSync(fd, buf)
    } catch (err) {
      if (err.code !== 'EAGAIN') throw err
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1) // a non-blocking socket: wait a little
      continue
    }
    if (n === 0) return null
    const nl = buf.subarray(0, n).indexOf(10)
    chunks.push(Buffer.from(buf.subarray(0, nl < 0 ? n : nl)))
    if (nl >= 0) return Buffer.concat(chunks).toString('utf8')
  }
}

// become switches to uid and gid for good: no groups, nothing in the permitted,
// effective, inheritable or ambient capability sets of any thread (checked in /proc).
// Node.js cannot empty its bounding set; no_new_privs keeps what is left there unused.
function become (uid, gid) {
  if (uid < 0) return // every tenant has the platform's uid here
  try {
    process.setgroups([])
    process.setgid(gid)
    process.setuid(uid)
  } catch (err) {
    fatal(`switch to uid ${uid}: ${err.message}`)
  }
  const want = {
    Uid: `${uid}\t${uid}\t${uid}\t${uid}`,
    Gid: `${gid}\t${gid}\t${gid}\t${gid}`,
    Groups: '',
    NoNewPrivs: '1',
    CapInh: '0'.repeat(16),
    CapPrm: '0'.repeat(16),
    CapEff: '0'.repeat(16),
    CapAmb: '0'.repeat(16)
  }
  for (const task of fs.readdirSync('/proc/self/task')) {
    const status = {}
    for (const line of fs.readFileSync(`/proc/self/task/${task}/status`, 'utf8').split('\n')) {
      const sep = line.indexOf(':\t')
      if (sep > 0) status[line.slice(0, sep)] = line.slice(sep + 2).trim()
    }
    for (const [name, value] of Object.entries(want)) {
      if (status[name] !== value) fatal(`still ${name} ${JSON.stringify(status[name])} after the switch to uid ${uid}`)
    }
  }
}

function fatal (message) {
  process.stderr.write(`sless: ${message}\n`)
  process.exit(1)
}

function main () {
  captureStream(process.stdout, true)
  captureStream(process.stderr, false)
  const entrypoint = process.env.SLESS_ENTRYPOINT || ''
  const mode = process.env.SLESS_MODE || 'server'
  // As the first process of a container (PID 1) Node.js would ignore
  // SIGTERM, leaving a stopped pod to wait for its grace period and a kill.
  process.on('SIGTERM', () => process.exit(143))
  if (mode === 'server') serve(entrypoint)
  else if (mode === 'job') runJob(entrypoint)
  else if (mode === 'check') check(entrypoint)
  else if (mode === 'pool') pool()
  else {
    process.stderr.write(`sless: SLESS_MODE must be server, job, check or pool, got ${JSON.stringify(mode)}\n`)
    process.exit(2)
  }
}

main()
