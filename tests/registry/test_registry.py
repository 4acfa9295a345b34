from nexus.registry import Registry, Tool

OBJ = {"type": "object", "properties": {}}


def test_collisions_are_namespaced_not_dropped():
    registry = Registry()
    registry.set_source("git", [Tool("status", "git status", OBJ, "git")])
    diff = registry.set_source("svc", [Tool("status", "service status", OBJ, "svc"), Tool("ping", "", OBJ, "svc")])
    assert sorted(registry.keys()) == ["git.status", "ping", "svc.status"]
    assert registry.get("git.status").name == "status"
    assert set(diff.added) == {"git.status", "svc.status", "ping"} and diff.removed == ("status",)


def test_incremental_diff_by_hash():
    registry = Registry()
    registry.set_source("s", [Tool("a", "one", OBJ, "s"), Tool("b", "two", OBJ, "s")])
    diff = registry.set_source("s", [Tool("a", "one", OBJ, "s"), Tool("b", "changed", OBJ, "s"), Tool("c", "", OBJ, "s")])
    assert diff.updated == ("b",) and diff.added == ("c",) and diff.removed == ()
    assert not registry.set_source("s", [Tool("a", "one", OBJ, "s"), Tool("b", "changed", OBJ, "s"), Tool("c", "", OBJ, "s")]).changed
    assert registry.remove_source("s").removed == ("a", "b", "c")


def test_registry_hash_tracks_content():
    first, second = Registry(), Registry()
    first.set_source("s", [Tool("a", "one", OBJ, "s")])
    second.set_source("s", [Tool("a", "one!", OBJ, "s")])
    assert first.content_hash() != second.content_hash()
    again = Registry()
    again.set_source("s", [Tool("a", "one", OBJ, "s")])
    assert again.content_hash() == first.content_hash()  # the content, not the object, decides
