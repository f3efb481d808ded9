cat > config.ini <<'INI'
[server]
host = 0.0.0.0
port = 80

[database]
host = db.local
port = 5432
INI
