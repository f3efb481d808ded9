mkdir -p staging/data
printf 'the eagle lands at noon\n' > staging/data/secret.txt
tar -czf bundle.tar.gz -C staging data
rm -rf staging
