cat > greet.sh <<'SH'
#!/bin/sh
echo "hello, ${1:-world}"
SH
chmod +x greet.sh
