cat > greet.sh <<'SH'
#!/bin/sh
echo "hello, $1"
SH
chmod +x greet.sh
