// The virtual network for private networking: one subnet for the app's VNet integration, one for private endpoints.
// Everything a subnet carries (its network security group, its way out) is declared with the subnet: the subnets are
// part of the virtual network's own definition, so each provision writes them whole, and whatever is not declared
// here (a route table or NSG a policy attached afterwards) would be taken off again.
param name string
param location string
param tags object = {}
param addressPrefix string
param appSubnetPrefix string
param privateEndpointSubnetPrefix string
param appNsgName string
param privateEndpointNsgName string
param natGatewayName string
param natPublicIpName string

@description('An existing route table (resource id) that sends the app subnet\'s outbound traffic to the landing zone\'s egress (a hub firewall); empty: a NAT gateway of its own.')
param egressRouteTableId string = ''

@description('DNS servers of the virtual network (a hub\'s DNS resolver, to resolve centrally managed private DNS zones); empty: Azure-provided DNS.')
param dnsServers array = []

@description('zoneRedundant: the NAT gateway is pinned to a zone and its public IP address spans all three, instead of both left to no zone.')
param zoneRedundant bool = false

// The app reaches the documentation origin, Entra ID and Application Insights over the internet through its integrated
// subnet; a new virtual network's subnets have no implicit outbound access, so the way out is explicit: a NAT gateway,
// or the landing zone's route to its firewall.
var natGatewayEnabled = empty(egressRouteTableId)
// A Standard NAT gateway is zonal (Microsoft Learn, "Azure NAT Gateway and availability zones"): with no zone Azure
// puts it in one it does not say; pinned, it uses a public IP address of its zone or a zone-redundant one. So under
// zoneRedundant the address spans the region's three zones and the gateway is pinned to zone 1, which it still
// depends on: an outage there stops the app's outbound traffic until the zone is back. A zone-redundant way out is a
// StandardV2 gateway with a StandardV2 address (an API version newer than this template's) or egressRouteTableId to
// a zone-redundant firewall.
// Neither zone setting can be changed on an existing gateway or address: choose zoneRedundant at the first deployment.
var natGatewayZones = zoneRedundant ? [
  '1'
] : null
var natPublicIpZones = zoneRedundant ? [
  '1'
  '2'
  '3'
] : null

// Nothing beyond Azure's default rules (virtual network traffic in, load balancer probes in, everything else in
// denied; outbound open): the NSGs exist so that a landing zone's "every subnet has an NSG" policy is met, and as the
// place its rules go.
resource appNsg 'Microsoft.Network/networkSecurityGroups@2023-11-01' = {
  name: appNsgName
  location: location
  tags: tags
  properties: {
    securityRules: []
  }
}

resource privateEndpointNsg 'Microsoft.Network/networkSecurityGroups@2023-11-01' = {
  name: privateEndpointNsgName
  location: location
  tags: tags
  properties: {
    securityRules: []
  }
}

resource natPublicIp 'Microsoft.Network/publicIPAddresses@2023-11-01' = if (natGatewayEnabled) {
  name: natPublicIpName
  location: location
  tags: tags
  sku: {
    name: 'Standard'
  }
  zones: natPublicIpZones
  properties: {
    publicIPAllocationMethod: 'Static'
    publicIPAddressVersion: 'IPv4'
  }
}

resource natGateway 'Microsoft.Network/natGateways@2023-11-01' = if (natGatewayEnabled) {
  name: natGatewayName
  location: location
  tags: tags
  sku: {
    name: 'Standard'
  }
  zones: natGatewayZones
  properties: {
    idleTimeoutInMinutes: 4
    publicIpAddresses: [
      {
        id: natPublicIp.id
      }
    ]
  }
}

resource vnet 'Microsoft.Network/virtualNetworks@2023-11-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    addressSpace: {
      addressPrefixes: [
        addressPrefix
      ]
    }
    dhcpOptions: empty(dnsServers) ? null : {
      dnsServers: dnsServers
    }
    subnets: [
      {
        name: 'app'
        properties: {
          addressPrefix: appSubnetPrefix
          // Flex Consumption integrates through a subnet delegated to Container Apps environments.
          delegations: [
            {
              name: 'flex-consumption'
              properties: {
                serviceName: 'Microsoft.App/environments'
              }
            }
          ]
          networkSecurityGroup: {
            id: appNsg.id
          }
          natGateway: natGatewayEnabled ? {
            id: natGateway.id
          } : null
          routeTable: natGatewayEnabled ? null : {
            id: egressRouteTableId
          }
        }
      }
      {
        name: 'private-endpoints'
        properties: {
          addressPrefix: privateEndpointSubnetPrefix
          privateEndpointNetworkPolicies: 'Disabled'
          networkSecurityGroup: {
            id: privateEndpointNsg.id
          }
        }
      }
    ]
  }
}

output id string = vnet.id
output appSubnetId string = vnet.properties.subnets[0].id
output privateEndpointSubnetId string = vnet.properties.subnets[1].id
