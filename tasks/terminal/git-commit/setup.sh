mkdir -p project/src
printf 'print("hi")\n' > project/src/main.py
printf '# project\n' > project/README.md
