//! The two Lua scripts the store runs, each one atomic round trip.
//!
//! [`DECIDE`] is a token bucket kept as one number, the time it will be
//! full again (the generic cell rate algorithm): at `now` it holds
//! `burst - (full_at - now) * rate` tokens, and taking `n` moves `full_at`
//! `n / rate` later. For each bucket it is given (the key's, then
//! the route's), it computes whether `cost` tokens are there at the
//! store's own clock (`TIME`, so gateways with skewed clocks agree); only
//! when every bucket has them are they all taken, so a request refused by
//! the route's bucket takes nothing from the key's (no refund needed). A
//! bucket's key expires once it would be full again.
//!
//! [`ANNOUNCE`] records this gateway in a sorted set scored by the store's
//! clock, drops those not heard from within the window, and counts the
//! rest: the number `on_store_error = "local"` divides limits by.

/// KEYS: the buckets. ARGV[1]: the cost; ARGV[2i], ARGV[2i+1]: bucket
/// i's tokens per second and burst. Returns `{0, 0}` when taken, else
/// `{i, wait}`: bucket i refused, with the microseconds until it would
/// pass (-1: never, the cost is over its burst). A cost of 0 reads every
/// bucket and takes nothing, writes nothing: the probe asks so whether a
/// decision that failed would work now.
pub(super) const DECIDE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local cost = tonumber(ARGV[1])
local after = {}
for i, key in ipairs(KEYS) do
  local rate = tonumber(ARGV[2 * i])
  local burst = tonumber(ARGV[2 * i + 1])
  if cost > burst then
    return {i, -1}
  end
  local step = 1000000 / rate
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then
    tat = now
  end
  local next = tat + cost * step
  local over = next - now - burst * step
  if over > 0 then
    return {i, math.ceil(over)}
  end
  after[i] = next
end
if cost == 0 then
  return {0, 0}
end
for i, key in ipairs(KEYS) do
  local ttl = math.ceil((after[i] - now) / 1000) + 1
  redis.call('SET', key, string.format('%.3f', after[i]), 'PX', ttl)
end
return {0, 0}
";

/// KEYS[1]: the set of gateways. ARGV[1]: this gateway's id; ARGV[2]: the
/// window in milliseconds. Returns the gateways heard from in the window.
pub(super) const ANNOUNCE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
redis.call('PEXPIRE', KEYS[1], window)
return redis.call('ZCARD', KEYS[1])
";
