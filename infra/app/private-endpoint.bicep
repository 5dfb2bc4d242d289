// One private endpoint with its private DNS zone: a zone of its own linked to the virtual network so the app resolves
// the private IP, or, in a landing zone whose private DNS zones are managed centrally, the existing zone of that name.
param name string
param location string
param tags object = {}
param subnetId string
param vnetId string
@description('Resource the endpoint connects to.')
param targetId string
@description('Sub-resource: blob, queue, table, searchService, ...')
param groupId string
@description('Private DNS zone, e.g. privatelink.blob.core.windows.net.')
param dnsZoneName string
@description('Resource id of the resource group holding existing private DNS zones (privatelink.*) to register the endpoint in; empty: the zone is created here and linked to the virtual network.')
param existingDnsZonesResourceGroupId string = ''

var createZone = empty(existingDnsZonesResourceGroupId)
var zoneId = createZone ? zone.id : '${existingDnsZonesResourceGroupId}/providers/Microsoft.Network/privateDnsZones/${dnsZoneName}'

resource zone 'Microsoft.Network/privateDnsZones@2020-06-01' = if (createZone) {
  name: dnsZoneName
  location: 'global'
  tags: tags
}

resource link 'Microsoft.Network/privateDnsZones/virtualNetworkLinks@2020-06-01' = if (createZone) {
  parent: zone
  name: '${last(split(vnetId, '/'))}-link'
  location: 'global'
  tags: tags
  properties: {
    registrationEnabled: false
    virtualNetwork: {
      id: vnetId
    }
  }
}

resource endpoint 'Microsoft.Network/privateEndpoints@2023-11-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    subnet: {
      id: subnetId
    }
    privateLinkServiceConnections: [
      {
        name: name
        properties: {
          privateLinkServiceId: targetId
          groupIds: [
            groupId
          ]
        }
      }
    ]
  }
}

resource zoneGroup 'Microsoft.Network/privateEndpoints/privateDnsZoneGroups@2023-11-01' = {
  parent: endpoint
  name: 'default'
  properties: {
    privateDnsZoneConfigs: [
      {
        name: replace(dnsZoneName, '.', '-')
        properties: {
          privateDnsZoneId: zoneId
        }
      }
    ]
  }
}
