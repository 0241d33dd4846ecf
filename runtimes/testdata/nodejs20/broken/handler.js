exports.handle = async (event) => {
  return { ok: true
}
