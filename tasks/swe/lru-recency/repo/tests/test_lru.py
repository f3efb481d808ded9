from cachekit.lru import LRUCache


def test_put_and_get():
    cache = LRUCache(2)
    cache.put("a", 1)
    assert cache.get("a") == 1


def test_capacity_bound():
    cache = LRUCache(2)
    for key in "abc":
        cache.put(key, key)
    assert len(cache) == 2


def test_oldest_evicted_without_reads():
    cache = LRUCache(2)
    for key in "abc":
        cache.put(key, key)
    assert cache.get("a") is None and cache.get("c") == "c"
