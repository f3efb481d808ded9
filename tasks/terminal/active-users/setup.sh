cat > users.json <<'JSON'
[{"name": "mallory", "active": false}, {"name": "carol", "active": true},
 {"name": "alice", "active": true}, {"name": "bob", "active": false},
 {"name": "dave", "active": true}]
JSON
