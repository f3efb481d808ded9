awk '/^\[/{s=$0} s=="[server]" && $1=="port" {print "port = 8080"; next} {print}' config.ini > config.new && mv config.new config.ini
