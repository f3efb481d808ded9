from collections import OrderedDict


class LRUCache:
    """A mapping of at most `capacity` items that evicts the least recently used one."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._items = OrderedDict()

    def get(self, key, default=None):
        return self._items.get(key, default)

    def put(self, key, value):
        self._items[key] = value
        self._items.move_to_end(key)
        if len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def __len__(self):
        return len(self._items)
