/* polite budget, Redis backend: the one Lua script every call runs (kept
 * apart from lib/budget_redis.c so that each file reads in one sitting).
 * Included once, by budget_redis.c. Not installed. */
#ifndef POLITE_BUDGET_REDIS_SCRIPT_H
#define POLITE_BUDGET_REDIS_SCRIPT_H

/* The one script. KEYS: tat, pause, leases (zset owner -> expiry), units
 * (hash owner -> slots held; the key keeps its name from before rate units
 * and slots were separate, so running fleets keep their slots), rate (hash:
 * r the learned rate, l its limit, g its generation, c the learned
 * in-flight cap, absent when none). ARGV: op,
 * owner, lease_us, interval_us, tau_us, concurrency, units (rate units to
 * charge), slots (slots to take, or to give back for "rel"), pause_us,
 * burst, then for "rate": rate, limit, generation, is_cut. The admission
 * paces at the learned rate when one is stored (capped by interval_us when
 * that is > 0) and returns it: the learned rate costs no round trip.
 * "rate" publishes (polite_shared_rate_merge's rule), "cap" stores the
 * in-flight cap given as slots (0 removes it), "clear" removes the pause,
 * the learned rate and the cap, "show" adds the holders. While a cap is
 * stored every participant's admission holds the account's slots in use
 * to min(concurrency, cap), and an admission with a slot returns the
 * account's slots in use after it (polite_budget_in_use).
 * "acq" with units 0 and slots 0 takes nothing and only renews this
 * owner's lease (and reports the pause). Times are microseconds of Redis TIME
 * (doubles: exact up to 2^53 us, the TAT keeps a fraction for rates like
 * 1.5/s). An admission at most min(T / 2, 1 ms) after the TAT starts on
 * it, not at now: a wake-up's lateness (and its round trip) is not lost at
 * every start of a burst-1 limiter, and no two starts are closer than
 * T / 2 (the scheduler's admission_time keeps the same slack for the
 * local budget, which it can ask at the planned time; Redis's clock is
 * its own). Returns {status, wait_us} with the status codes of
 * polite_budget_status; op "pause" returns {0, pause left}. Every key gets
 * an expiry past its last use so abandoned accounts vanish. */
static const char SCRIPT[] =
    "if redis.replicate_commands then pcall(redis.replicate_commands) end\n"
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
    "local op, owner = ARGV[1], ARGV[2]\n"
    "local lease = tonumber(ARGV[3])\n"
    "local T, tau = tonumber(ARGV[4]), tonumber(ARGV[5])\n"
    "local conc = tonumber(ARGV[6])\n"
    "local units, slots = tonumber(ARGV[7]), tonumber(ARGV[8])\n"
    "local function fmt(x) return string.format('%.3f', x) end\n"
    "local function ret(a, b)\n"
    "  local v = redis.call('HMGET', KEYS[5], 'r', 'l', 'g')\n"
    "  return {a, b, v[1] or '0', v[2] or '0', tonumber(v[3] or '0')}\n"
    "end\n"
    "local burst = tonumber(ARGV[10])\n"
    "local lr = tonumber(redis.call('HGET', KEYS[5], 'r') or '0')\n"
    "if lr > 0 and (T <= 0 or 1000000 / lr > T) then\n"
    "  T = 1000000 / lr\n"
    "  tau = (burst - 1) * T\n"
    "end\n"
    "local function keep_leases()\n"
    "  local top = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')\n"
    "  if top[2] then\n"
    "    local ms = math.ceil((tonumber(top[2]) - now) / 1000) + 1000\n"
    "    redis.call('PEXPIRE', KEYS[3], ms)\n"
    "    redis.call('PEXPIRE', KEYS[4], ms)\n"
    "  end\n"
    "end\n"
    "local function renew()\n"
    "  if redis.call('HEXISTS', KEYS[4], owner) == 1 then\n"
    "    redis.call('ZADD', KEYS[3], fmt(now + lease), owner)\n"
    "    keep_leases()\n"
    "  end\n"
    "end\n"
    "if op == 'rel' then\n"
    "  local left = redis.call('HINCRBY', KEYS[4], owner, -slots)\n"
    "  if left <= 0 then\n"
    "    redis.call('HDEL', KEYS[4], owner)\n"
    "    redis.call('ZREM', KEYS[3], owner)\n"
    "  else\n"
    "    renew()\n"
    "  end\n"
    "  return {0, 0}\n"
    "end\n"
    "if op == 'drop' then\n"
    "  redis.call('HDEL', KEYS[4], owner)\n"
    "  redis.call('ZREM', KEYS[3], owner)\n"
    "  return {0, 0}\n"
    "end\n"
    "if op == 'rate' then\n"
    "  local v = redis.call('HMGET', KEYS[5], 'r', 'l', 'g')\n"
    "  local r, g = tonumber(v[1] or '0'), tonumber(v[3] or '0')\n"
    "  local nr, nl = tonumber(ARGV[11]), tonumber(ARGV[12])\n"
    "  local ng, cut = tonumber(ARGV[13]), ARGV[14] == '1'\n"
    "  local changed = 0\n"
    "  if nr > 0 and cut then\n"
    "    if r <= 0 or nr < r then r = nr end\n"
    "    redis.call('HSET', KEYS[5], 'r', string.format('%.6f', r),\n"
    "               'l', string.format('%.6f', nl), 'g', g + 1)\n"
    "    changed = 1\n"
    "  elseif nr > 0 and (r <= 0 or (ng == g and nr > r)) then\n"
    "    redis.call('HSET', KEYS[5], 'r', string.format('%.6f', nr))\n"
    "    changed = 1\n"
    "  end\n"
    "  redis.call('PEXPIRE', KEYS[5], 86400000)\n"
    "  return ret(changed, 0)\n"
    "end\n"
    "if op == 'cap' then\n"
    "  if slots > 0 then redis.call('HSET', KEYS[5], 'c', slots)\n"
    "  else redis.call('HDEL', KEYS[5], 'c') end\n"
    "  redis.call('PEXPIRE', KEYS[5], 86400000)\n"
    "  return {0, 0}\n"
    "end\n"
    "if op == 'clear' then\n"
    "  redis.call('DEL', KEYS[2])\n"
    "  redis.call('HDEL', KEYS[5], 'c')\n"
    "  local tat = tonumber(redis.call('GET', KEYS[1]) or '0')\n"
    "  if tat > now then redis.call('SET', KEYS[1], fmt(now), 'PX', 1000) end\n"
    "  local g = tonumber(redis.call('HGET', KEYS[5], 'g') or '0')\n"
    "  redis.call('HSET', KEYS[5], 'r', '0', 'l', '0', 'g', g + 1)\n"
    "  redis.call('PEXPIRE', KEYS[5], 86400000)\n"
    "  return ret(0, 0)\n"
    "end\n"
    "if op == 'show' then\n"
    "  local p = tonumber(redis.call('GET', KEYS[2]) or '0')\n"
    "  local out = ret(math.max(0, math.ceil(p - now)), 0)\n"
    "  local ls = redis.call('ZRANGE', KEYS[3], 0, -1, 'WITHSCORES')\n"
    "  for i = 1, #ls, 2 do\n"
    "    local left = math.ceil(tonumber(ls[i + 1]) - now)\n"
    "    if left > 0 then\n"
    "      out[#out + 1] = ls[i]\n"
    "      out[#out + 1] = tonumber(redis.call('HGET', KEYS[4], ls[i]) or "
    "'0')\n"
    "      out[#out + 1] = left\n"
    "    end\n"
    "  end\n"
    "  return out\n"
    "end\n"
    "renew()\n"
    "local p = tonumber(redis.call('GET', KEYS[2]) or '0')\n"
    "if op == 'pause' then\n"
    "  local u = now + tonumber(ARGV[9])\n"
    "  if u <= p then return {0, math.ceil(p - now)} end\n"
    "  redis.call('SET', KEYS[2], fmt(u), 'PX',\n"
    "             math.ceil((u - now) / 1000) + 1000)\n"
    "  if T > 0 then\n"
    "    local tat = tonumber(redis.call('GET', KEYS[1]) or '0')\n"
    "    if u + tau > tat then\n"
    "      redis.call('SET', KEYS[1], fmt(u + tau), 'PX',\n"
    "                 math.ceil((u + tau - now) / 1000) + 1000)\n"
    "    end\n"
    "  end\n"
    "  return {0, math.ceil(u - now)}\n"
    "end\n"
    "if now < p then return ret(2, math.ceil(p - now)) end\n"
    "local used = 0\n"
    "if conc > 0 and slots > 0 then\n"
    "  local cap = tonumber(redis.call('HGET', KEYS[5], 'c') or '0')\n"
    "  if cap > 0 and cap < conc then conc = cap end\n"
    "  local gone = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)\n"
    "  for _, o in ipairs(gone) do redis.call('HDEL', KEYS[4], o) end\n"
    "  if #gone > 0 then\n"
    "    redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)\n"
    "  end\n"
    "  for _, v in ipairs(redis.call('HVALS', KEYS[4])) do\n"
    "    used = used + tonumber(v)\n"
    "  end\n"
    "  if slots > conc or used + slots > conc then\n"
    "    local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')\n"
    "    if first[2] then\n"
    "      return ret(3, math.max(1, math.ceil(tonumber(first[2]) - now)))\n"
    "    end\n"
    "    return ret(3, -1)\n"
    "  end\n"
    "end\n"
    "if T > 0 and units > 0 then\n"
    "  local tat = tonumber(redis.call('GET', KEYS[1]) or '0')\n"
    "  local inc = units * T\n"
    "  local allow = tat + math.min(inc - T - tau, 0)\n"
    "  if allow > now then return ret(1, math.ceil(allow - now)) end\n"
    "  local start = now\n"
    "  if tat > now - math.min(T / 2, 1000) then start = tat end\n"
    "  local nt = start + inc\n"
    "  redis.call('SET', KEYS[1], fmt(nt), 'PX',\n"
    "             math.ceil((nt - now) / 1000) + 1000)\n"
    "end\n"
    "if conc > 0 and slots > 0 then\n"
    "  redis.call('HINCRBY', KEYS[4], owner, slots)\n"
    "  redis.call('ZADD', KEYS[3], fmt(now + lease), owner)\n"
    "  keep_leases()\n"
    "  return ret(0, used + slots)\n"
    "end\n"
    "return ret(0, 0)\n";

#endif
